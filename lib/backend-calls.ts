import type { AcquireRequest, LockBackend, LockGrant } from './backends/lock-backend.interface';
import { LockBackendError, LockError, LockTimeoutError } from './errors';
import { withDeadline } from './utils/deadline';

/** setTimeout fires at once past this; longer waits (Infinity) get no timer. */
const MAX_TIMER_DELAY = 2_147_483_647;

/** How long past `waitTimeout` the core waits for a backend that ignores its abort signal before giving up on it. */
const BACKEND_ABORT_GRACE_MS = 1_000;

/**
 * LockService's calls to its backend: each with a deadline, failures mapped to LockBackendError (naming the
 * backend's address), and a grant that arrives after the caller gave up released rather than left to its ttl.
 */
export class BackendCalls {
  constructor(
    private readonly backend: LockBackend,
    private readonly operationTimeout: number,
  ) {}

  /** One attempt; null when the key is busy. */
  async tryGrant(request: AcquireRequest): Promise<LockGrant | null> {
    const attempt = this.backend.tryAcquire(request);
    try {
      return await withDeadline(attempt, this.operationTimeout, () =>
        this.backendError('tryAcquire', `no reply within ${this.operationTimeout} ms`),
      );
    } catch (error) {
      this.releaseLateGrant(request, attempt);
      throw this.asLockError('tryAcquire', error);
    }
  }

  /**
   * Waits up to `remaining` ms for the key. Rejects with LockTimeoutError after it, or with the caller's exact
   * reason when `cancel` aborts.
   */
  async waitForGrant(request: AcquireRequest, remaining: number, waitTimeout: number, cancel?: AbortSignal): Promise<LockGrant> {
    // One controller for both the deadline and the caller's cancel: AbortSignal.any is slow on Node 20.
    const controller = new AbortController();
    const timer = remaining <= MAX_TIMER_DELAY ? setTimeout(() => controller.abort(new LockTimeoutError(request.key, waitTimeout)), remaining) : undefined;
    const onCancel = () => controller.abort(cancel!.reason);
    if (cancel?.aborted) onCancel();
    else cancel?.addEventListener('abort', onCancel, { once: true });
    const attempt = this.backend.acquire(request, controller.signal);
    try {
      // A backend that ignores its abort signal must not hang the caller either.
      return await withDeadline(attempt, remaining + BACKEND_ABORT_GRACE_MS, () =>
        this.backendError('acquire', `no reply within waitTimeout=${waitTimeout} ms`),
      );
    } catch (error) {
      this.releaseLateGrant(request, attempt);
      // The caller cancelled the wait: hand back exactly their reason.
      if (cancel?.aborted && error === cancel.reason) throw error;
      throw this.asLockError('acquire', error);
    } finally {
      clearTimeout(timer);
      cancel?.removeEventListener('abort', onCancel);
    }
  }

  /** Any other call (inspect, isLocked), with the operation deadline. */
  call<T>(operation: string, work: Promise<T>): Promise<T> {
    return withDeadline(work, this.operationTimeout, () =>
      this.backendError(operation, `no reply within ${this.operationTimeout} ms`),
    ).catch((error) => {
      throw this.asLockError(operation, error);
    });
  }

  /** Our own errors (and TypeErrors from validation) pass; anything else becomes a LockBackendError. */
  asLockError(operation: string, error: unknown): unknown {
    if (error instanceof LockError || error instanceof TypeError) return error;
    return this.backendError(operation, error instanceof Error ? error.message : String(error), error);
  }

  /** If we gave up on a call that later succeeds, free the lock it took rather than leave it until its ttl. */
  private releaseLateGrant(request: AcquireRequest, attempt: Promise<LockGrant | null>): void {
    attempt.then(
      (grant) => {
        if (grant) void this.backend.release({ ...request, fencingToken: grant.fencingToken, state: grant.state }).catch(() => undefined);
      },
      () => undefined,
    );
  }

  private backendError(operation: string, detail: string, cause?: unknown): LockBackendError {
    return new LockBackendError(this.backend.kind, this.backend.address, operation, detail, cause === undefined ? undefined : { cause });
  }
}
