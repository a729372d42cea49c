import { LockBackendError } from '../../errors';
import { ClosableWaits } from './closable-waits';

/** An acquire under way that close() can end: it rejects with `reason` and leaves the server clean. */
export interface Cancellable {
  cancel(reason: unknown): void;
}

/**
 * What every backend keeps between its constructor and close(), in one place:
 *
 * - whether it is closed (`assertOpen`, `closedError`);
 * - the acquires under way (`wait` for a wait on a signal of its own, `follow` for an attempt object that
 *   cancels itself), so close() can end them all;
 * - background clean-ups (`track`): deletes, releases of late grants, revokes. close() waits for them a bounded
 *   time, so a close() on an unreachable server still ends.
 *
 * `close(shutDown)` runs `shutDown` once; later calls return the same promise.
 */
export class BackendLifecycle {
  private closing?: Promise<void>;
  private readonly waits = new ClosableWaits();
  private readonly attempts = new Map<Cancellable, Promise<unknown>>();
  private readonly background = new Set<Promise<unknown>>();

  constructor(
    private readonly kind: string,
    private readonly address: string,
  ) {}

  get isClosed(): boolean {
    return this.closing !== undefined;
  }

  /** The error of a call made after close(). */
  closedError(operation: string): LockBackendError {
    return new LockBackendError(this.kind, this.address, operation, 'the backend is closed (close() was called)');
  }

  assertOpen(operation: string): void {
    if (this.closing) throw this.closedError(operation);
  }

  /** Runs `wait` on a signal that follows `signal` and that close() aborts too. */
  wait<T>(signal: AbortSignal, wait: (signal: AbortSignal) => Promise<T>): Promise<T> {
    return this.waits.run(signal, wait);
  }

  /** Tracks `attempt` until `result` settles, so close() can cancel it and wait for its clean-up. */
  follow<T>(attempt: Cancellable, result: Promise<T>): Promise<T> {
    const forget = () => void this.attempts.delete(attempt);
    this.attempts.set(attempt, result.then(forget, forget));
    return result;
  }

  /** A clean-up that runs on its own; its failure is ignored (the server's ttl or session is the fallback). */
  track(work: Promise<unknown>): void {
    const tracked: Promise<unknown> = work.catch(() => undefined).finally(() => this.background.delete(tracked));
    this.background.add(tracked);
  }

  /**
   * Marks the backend closed and runs `shutDown` once. New calls fail with closedError from now on; `shutDown`
   * usually calls endAcquires(), then drain(), then closes its connections.
   */
  close(shutDown: () => Promise<void>): Promise<void> {
    this.closing ??= shutDown();
    return this.closing;
  }

  /** Ends every acquire under way with `reason` and waits up to `graceMs` for them (and their clean-ups). */
  async endAcquires(reason: unknown, graceMs: number): Promise<void> {
    const waitsEnded = this.waits.abortAll(reason);
    for (const attempt of this.attempts.keys()) attempt.cancel(reason);
    await settledWithin(Promise.all([waitsEnded, ...this.attempts.values()]), graceMs);
  }

  /** Waits up to `graceMs` for the background clean-ups, including those the ended acquires left. */
  drain(graceMs: number): Promise<void> {
    return settledWithin(Promise.allSettled([...this.background]), graceMs);
  }
}

/**
 * Resolves when `work` settles or after `ms`, whichever is first. The timer is ref'd unless `unref`: close() is
 * awaited, so the process must not exit underneath it; a wait inside an operation need not hold the process.
 */
export function settledWithin(work: Promise<unknown>, ms: number, unref = false): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    if (unref) timer.unref();
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    void work.then(done, done);
  });
}
