/**
 * One waiter's doorbell. `notify` may ring while an attempt is in flight; the next `wait` then returns at
 * once instead of sleeping through a release that already happened. `reset` just before each attempt
 * forgets older rings: that attempt sees the newer state anyway.
 */
export class Wakeup {
  private rung = false;
  private wake?: () => void;

  readonly notify = (): void => {
    this.rung = true;
    this.wake?.();
  };

  reset(): void {
    this.rung = false;
  }

  /** Rung, and no attempt has started since: the waiter has a wake it has not acted on yet. */
  get pending(): boolean {
    return this.rung;
  }

  /** Resolves on a ring or after `ms` (unref'd timer); rejects with `signal.reason` when it aborts. */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    // Stays rung until the next reset(), so `pending` tells that the attempt after this wait acts on a wake.
    if (this.rung) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const settle = (outcome: () => void) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.wake = undefined;
        outcome();
      };
      const onAbort = () => settle(() => reject(signal.reason));
      const timer = setTimeout(() => settle(resolve), ms);
      timer.unref?.();
      this.wake = () => settle(resolve);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
