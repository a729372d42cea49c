/**
 * Calls running in one app that hold a lock, awaited on shutdown before LockService closes: closing would release
 * a running call's lock under it, and another instance could then take the key while the call still works on
 * what it protects. Used for `@ScheduledLock` firings and `@WithLock` provider methods.
 */
export class RunningCalls {
  private readonly running = new Set<Promise<unknown>>();
  private closing = false;

  get isClosing(): boolean {
    return this.closing;
  }

  track<T>(call: Promise<T>): Promise<T> {
    const forget = (): void => void this.running.delete(settled);
    const settled: Promise<void> = call.then(forget, forget);
    this.running.add(settled);
    return call;
  }

  /** Marks the app as shutting down; resolves with how many calls were running, once they have settled. */
  async close(): Promise<number> {
    this.closing = true;
    const count = this.running.size;
    await Promise.all([...this.running]);
    return count;
  }
}
