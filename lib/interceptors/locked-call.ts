import { Observable, Subscription } from 'rxjs';
import { raceAbort } from '../utils/abort';
import { currentLockScope, LockScope, RequestIdSource, runInLockScope } from '../context/lock-context';
import type { LockOptions } from '../lock-options';
import type { LockService } from '../lock.service';
import type { WaitHook } from '../backend-calls';
import { LockSet } from './lock-set';

export interface LockedCallOptions {
  /** Carried into lock events and logs. */
  readonly requestId?: RequestIdSource;
  /** Called once, only if a key has to be waited for, with a function that cancels the wait (a client that left). */
  readonly cancelWhen?: (cancel: (reason: Error) => void) => void;
  /** Rewrites every error the Observable forwards (the interceptor's HTTP / RPC / WS mapping). */
  readonly mapError?: (error: unknown) => unknown;
  /** The Nest ExecutionContext being locked, so that a second LockInterceptor on it passes (LockScope.locks()). */
  readonly call?: object;
}

/**
 * A cold Observable that acquires the keys when subscribed, runs `work` inside the lock scope, and releases
 * when the work completes, errors or is unsubscribed (an HTTP client that disconnects from an SSE stream).
 * Completion and errors are forwarded only after the release, so whoever sees the result can take the lock.
 * If a lock is lost while the work runs, the stream errors at once with that LockLostError.
 *
 * One Observable and one promise reaction of its own per call, no operator chain: it runs on every request.
 */
export function lockedObservable<T>(
  service: LockService,
  resolveKeys: () => readonly string[],
  options: LockOptions,
  work: (locks: LockSet) => Observable<T>,
  { requestId, cancelWhen, mapError, call }: LockedCallOptions = {},
): Observable<T> {
  return new Observable<T>((subscriber) => {
    let locks: LockSet | undefined;
    let scope: LockScope | undefined;
    let inner: Subscription | undefined;
    let stopWatching: (() => void) | undefined;
    let acquiring = true;
    let left = false;
    let done = false;
    // Both end the call, after its locks were released: its scope forgets them then (see LockScope.end).
    const fail = (error: unknown) => {
      scope?.end();
      let mapped: unknown;
      try {
        mapped = mapError ? mapError(error) : error;
      } catch (mappingError) {
        mapped = mappingError;
      }
      subscriber.error(mapped);
    };
    const complete = () => {
      scope?.end();
      subscriber.complete();
    };
    /** Releases, then forwards how the work ended: whoever sees the result can take the lock. */
    const finish = (held: LockSet, forward: () => void) => {
      if (done) return;
      done = true;
      stopWatching?.();
      void held.release(forward);
    };
    // A subscriber that leaves while still queued (client disconnect) cancels the wait. `cancelWhen` is set up
    // only when a key has to be waited for, and once for all the keys of the call.
    let abortWait: ((reason: Error) => void) | undefined;
    let watchingCaller = false;
    const onWait: WaitHook = (abort) => {
      abortWait = abort;
      if (left) return abort(leftWhileWaiting());
      if (!watchingCaller && cancelWhen) {
        watchingCaller = true;
        cancelWhen((reason) => abortWait?.(reason));
      }
    };
    const run = (acquired: LockSet) => {
      acquiring = false;
      locks = acquired;
      if (subscriber.closed) {
        // Unsubscribed while waiting for the lock: nobody will run the work.
        void acquired.release();
        return;
      }
      enterHandlerScope(acquired);
      let source: Observable<T>;
      try {
        source = work(acquired);
      } catch (error) {
        finish(acquired, () => fail(error));
        return;
      }
      stopWatching = acquired.onLost((error) => {
        inner?.unsubscribe();
        finish(acquired, () => fail(error));
      });
      // Lost before the work started (a slow grant): it does not run at all.
      if (done) return;
      // In the lock scope still (promise reactions run where they were created), so the work sees the locks.
      inner = source.subscribe({
        next: (value) => subscriber.next(value),
        error: (error: unknown) => finish(acquired, () => fail(error)),
        complete: () => finish(acquired, complete),
      });
    };
    // One lock scope for the acquisition and the work (one AsyncLocalStorage run per call).
    runInLockScope(
      (own) => {
        scope = own;
        let acquisition: Promise<LockSet>;
        try {
          acquisition = LockSet.acquire(service, resolveKeys(), options, onWait);
        } catch (error) {
          acquiring = false;
          fail(error);
          return;
        }
        acquisition.then(run, (error: unknown) => {
          acquiring = false;
          fail(error);
        });
      },
      requestId,
      call,
    );
    return () => {
      left = true;
      if (acquiring) abortWait?.(leftWhileWaiting());
      stopWatching?.();
      inner?.unsubscribe();
      void locks?.release(() => scope?.end());
    };
  });
}

function leftWhileWaiting(): Error {
  return new Error('the caller unsubscribed while waiting for the lock');
}

/**
 * Promise form for provider methods: acquires, runs `work` in the lock scope, releases when it settles,
 * and returns or rethrows exactly what it did. Rejects with the LockLostError as soon as a lock is lost.
 */
export function lockedPromise<T>(
  service: LockService,
  keys: readonly string[],
  options: LockOptions,
  work: () => T | PromiseLike<T>,
): Promise<T> {
  return runInLockScope(async (scope) => {
    const locks = await LockSet.acquire(service, keys, options);
    try {
      enterHandlerScope(locks);
      const lost = locks.signal();
      // A lock can be lost before the work starts (a slow grant); then the work does not run at all.
      lost.throwIfAborted();
      return await raceAbort(Promise.resolve(work()), lost, () => lost.reason);
    } finally {
      await locks.release();
      scope.end();
    }
  });
}

/** Makes the locks visible to nested acquisitions, `LockService.current()` and `@CurrentLock()`. */
export function enterHandlerScope(locks: LockSet): void {
  locks.register();
  currentLockScope()!.handlerLockSet = locks;
}
