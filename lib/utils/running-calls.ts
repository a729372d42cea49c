/**
 * Calls running in one app that hold a lock, awaited on shutdown before LockService closes: closing would release
 * a running call's lock under it, and another instance could then take the key while the call still works on
 * what it protects. Used for `@ScheduledLock` firings and `@WithLock` provider methods. A call still waiting for
 * its lock at shutdown has not started its work: its wait is ended (waitSignal) rather than waited for.
 */
export class RunningCalls {
  private readonly running = new Set<Promise<unknown>>();
  /** The waits for a lock of running calls, each with the error close() ends it with. */
  private readonly waiting = new Map<AbortController, () => unknown>();
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

  /**
   * A signal for one call's wait for its lock, which close() aborts with `reason()`. Call `waited()` once the wait
   * is over, granted or not: from then on the call is waited for like any running one.
   */
  waitSignal(reason: () => unknown): { readonly signal: AbortSignal; waited(): void } {
    const controller = new AbortController();
    this.waiting.set(controller, reason);
    return { signal: controller.signal, waited: () => void this.waiting.delete(controller) };
  }

  /**
   * Marks the app as shutting down and ends the waits for a lock; resolves, once every call has settled, with how
   * many were running with their lock and how many were refused while they waited for it.
   */
  async close(): Promise<{ readonly finished: number; readonly refused: number }> {
    this.closing = true;
    const waits = [...this.waiting];
    this.waiting.clear();
    for (const [controller, reason] of waits) controller.abort(reason());
    const count = this.running.size;
    await Promise.all([...this.running]);
    return { finished: count - waits.length, refused: waits.length };
  }
}
