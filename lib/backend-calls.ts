import { getEventListeners } from 'node:events';
import type { AcquireRequest, LockBackend, LockGrant } from './backends/lock-backend.interface';
import { LockBackendError, LockError, LockTimeoutError } from './errors';
import { backendErrorOf } from './errors/lock-backend.error';
import { afterMicrotask, settleWithDeadline, withDeadline } from './utils/deadline';
import { MAX_TIMER_DELAY } from './utils/clock';
import { raceAbort } from './utils/abort';

/**
 * Told when a wait for a busy key is under way, with a function that cancels it: the interceptor uses it for a
 * client that disconnects, without an AbortController per request. The function does nothing once the wait ended.
 */
export type WaitHook = (abort: (reason: Error) => void) => void;

/** Enough for the waits that overlap under load; a burst past it makes new controllers. */
const MAX_IDLE_CONTROLLERS = 64;

/** How long past `waitTimeout` the core waits for a backend that ignores its abort signal before giving up on it. */
const BACKEND_ABORT_GRACE_MS = 1_000;

/**
 * LockService's calls to its backend: each with a deadline, failures mapped to LockBackendError (naming the
 * backend's address), and a grant that arrives after the caller gave up released rather than left to its ttl.
 */
export class BackendCalls {
  /** Controllers of finished waits, never aborted, for the next waits (see recycle). */
  private readonly idleControllers: AbortController[] = [];

  constructor(
    private readonly backend: LockBackend,
    private readonly operationTimeout: number,
  ) {}

  /**
   * One attempt; null when the key is busy. Every uncontended acquire on a backend with `tryBeforeWait` (Redis)
   * comes through here: the deadline and the error mapping share one reaction. `operation` is the caller's
   * (acquire() tries first too), so that the error names what the user called. `waitTimeout`: acquire()'s, when
   * it is shorter than operationTimeout it bounds the try, so an acquire never outlasts it (0: no such bound).
   */
  tryGrant(
    request: AcquireRequest,
    operation: 'acquire' | 'tryAcquire',
    waitTimeout = 0,
    signal?: AbortSignal,
  ): Promise<LockGrant | null> {
    let attempt: Promise<LockGrant | null>;
    try {
      attempt = this.backend.tryAcquire(request, operation);
    } catch (error) {
      return Promise.reject(this.asLockError(operation, error));
    }
    const byWaitTimeout = waitTimeout > 0 && waitTimeout < this.operationTimeout;
    const answer = settleWithDeadline(
      attempt,
      byWaitTimeout ? waitTimeout : this.operationTimeout,
      () =>
        this.backendError(
          operation,
          byWaitTimeout
            ? `no reply within waitTimeout=${waitTimeout} ms`
            : `no reply within ${this.operationTimeout} ms`,
        ),
      (grant) => grant,
      (error: unknown) => {
        this.releaseLateGrant(request, attempt);
        throw this.asLockError(operation, error);
      },
    );
    // The caller's signal ends an acquire's first attempt too (a stalled server), and a grant that comes later goes back.
    if (!signal) return answer;
    return raceAbort(answer, signal, () => {
      this.releaseLateGrant(request, attempt);
      return signal.reason;
    });
  }

  /**
   * Waits up to `remaining` ms for the key. Rejects with LockTimeoutError after it, or with the caller's exact
   * reason when `signal` aborts or `onWait`'s abort function is called.
   *
   * Every uncontended acquire on a backend without `tryBeforeWait` (memory, etcd, ZooKeeper) comes through
   * here, so it costs a (recycled) controller and three promises of its own; a wait still under way one
   * microtask later also gets a timer, which aborts the backend's wait at the deadline and is then re-armed as
   * the grace for a backend that ignores the abort.
   */
  waitForGrant(
    request: AcquireRequest,
    remaining: number,
    waitTimeout: number,
    signal?: AbortSignal,
    onWait?: WaitHook,
  ): Promise<LockGrant> {
    // One controller for the deadline and every way to cancel: AbortSignal.any is slow on Node 20.
    const controller = this.idleControllers.pop() ?? new AbortController();
    let attempt: Promise<LockGrant>;
    try {
      attempt = this.backend.acquire(request, controller.signal);
    } catch (error) {
      return Promise.reject(this.asLockError('acquire', error));
    }
    return new Promise<LockGrant>((resolve, reject) => {
      let settled = false;
      let cancelReason: unknown;
      let cancelled = false;
      const giveUp = () => {
        settled = true;
        signal?.removeEventListener('abort', onSignal);
        this.releaseLateGrant(request, attempt);
        reject(
          cancelled ? cancelReason : this.backendError('acquire', `no reply within waitTimeout=${waitTimeout} ms`),
        );
      };
      const abort = (reason: unknown, byCaller: boolean) => {
        if (settled || controller.signal.aborted) return;
        cancelled = byCaller;
        cancelReason = reason;
        clearTimeout(timer);
        controller.abort(reason);
        // A backend that ignores its abort signal must not hang the caller either.
        timer = setTimeout(giveUp, BACKEND_ABORT_GRACE_MS);
      };
      const onSignal = () => abort(signal!.reason, true);
      let timer: NodeJS.Timeout | undefined;
      attempt.then(
        (grant) => {
          if (settled) return; // given up on: releaseLateGrant frees it
          settled = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onSignal);
          this.recycle(controller);
          resolve(grant);
        },
        (error: unknown) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onSignal);
          this.recycle(controller);
          // The caller cancelled the wait: hand back exactly their reason, also when the backend ended its wait with
          // an error of its own (etcd: a request still unanswered on a stalled server).
          reject(cancelled ? cancelReason : this.asLockError('acquire', error));
        },
      );
      // The deadline, the caller's signal and `onWait` are set up one microtask later, and only if the key is
      // still not granted: on a backend that grants a free key at once (memory), the reaction above has run by
      // then, so an uncontended acquire arms no timer and adds no listener (a 'close' listener on the response
      // costs some 3 µs). The microtask runs in the same turn of the event loop, whose clock timers count from,
      // so the deadline does not move.
      afterMicrotask(() => {
        if (settled) return;
        if (remaining <= MAX_TIMER_DELAY) {
          timer = setTimeout(() => abort(new LockTimeoutError(request.key, waitTimeout), false), remaining);
        }
        signal?.addEventListener('abort', onSignal, { once: true });
        if (signal?.aborted) onSignal();
        try {
          onWait?.((reason) => abort(reason, true));
        } catch (error) {
          abort(error, true);
        }
      });
    });
  }

  /**
   * Keeps a controller for the next wait if it was never aborted and the backend no longer listens to its
   * signal (the contract: a backend stops listening once its acquire settled). An AbortController costs some
   * 3 µs on Node 20, paid by every uncontended acquire on a backend without `tryBeforeWait`.
   */
  private recycle(controller: AbortController): void {
    if (controller.signal.aborted || this.idleControllers.length >= MAX_IDLE_CONTROLLERS) return;
    if (getEventListeners(controller.signal, 'abort').length > 0) return;
    this.idleControllers.push(controller);
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
        if (grant)
          void this.backend
            .release({ ...request, fencingToken: grant.fencingToken, state: grant.state })
            .catch(() => undefined);
      },
      () => undefined,
    );
  }

  private backendError(operation: string, detail: string, cause?: unknown): LockBackendError {
    return backendErrorOf(this.backend, operation, detail, cause);
  }
}
