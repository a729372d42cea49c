/**
 * Wall-clock milliseconds with sub-millisecond resolution that agree across processes on one machine:
 * each process's timeOrigin is its own start time on the shared clock, so stamps from forked contenders
 * can be merged into one timeline.
 */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
