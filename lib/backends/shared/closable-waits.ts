/**
 * The waits a backend has under way, so close() can abort them all. Each wait runs on a signal of its own
 * that follows the caller's signal and that close() can abort too.
 */
export class ClosableWaits {
  private readonly waits = new Map<AbortController, Promise<unknown>>();

  async run<T>(signal: AbortSignal, wait: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (signal.aborted) throw signal.reason;
    const controller = new AbortController();
    const follow = () => controller.abort(signal.reason);
    signal.addEventListener('abort', follow, { once: true });
    const outcome = wait(controller.signal);
    this.waits.set(controller, outcome);
    try {
      return await outcome;
    } finally {
      signal.removeEventListener('abort', follow);
      this.waits.delete(controller);
    }
  }

  /** Aborts every wait with `reason` and resolves when all of them have settled. */
  async abortAll(reason: unknown): Promise<void> {
    for (const controller of this.waits.keys()) controller.abort(reason);
    await Promise.allSettled(this.waits.values());
  }
}
