import type { LockService } from '../../lib/lock.service';
import type { Interval } from './kinds-worker-protocol';

/**
 * Takes a permit, stays inside `holdMs`, and releases. The interval is measured inside the grant (after
 * acquire resolved, before release is called), so overlaps it shows certainly happened.
 */
export async function holdPermit(
  locks: LockService,
  key: string,
  options: { permits: number; ttl: number; waitTimeout: number },
  holdMs: number,
): Promise<Interval> {
  const lock = await locks.acquire(key, options);
  const start = process.hrtime.bigint();
  await new Promise((resolve) => setTimeout(resolve, holdMs));
  const end = process.hrtime.bigint();
  await lock.release();
  return { start: start.toString(), end: end.toString(), fencingToken: lock.fencingToken.toString() };
}

/** The largest number of intervals open at the same instant (a sweep over start/end events). */
export function maxOverlap(intervals: readonly Interval[]): number {
  const events = intervals.flatMap((interval) => [
    { at: BigInt(interval.start), delta: 1 },
    { at: BigInt(interval.end), delta: -1 },
  ]);
  // At equal instants count the ends first: touching intervals do not overlap.
  events.sort((a, b) => (a.at === b.at ? a.delta - b.delta : a.at < b.at ? -1 : 1));
  let open = 0;
  let max = 0;
  for (const event of events) {
    open += event.delta;
    max = Math.max(max, open);
  }
  return max;
}
