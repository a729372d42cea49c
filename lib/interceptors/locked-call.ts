import { MonoTypeOperatorFunction, Observable, Subscription } from 'rxjs';
import { raceAbort } from '../backends/shared/abort';
import { currentLockScope, LockScope, lockScopeStorage, RequestIdSource, runInLockScope } from '../context/lock-context';
import type { LockOptions } from '../lock-options';
import type { LockService } from '../lock.service';
import { LockSet } from './lock-set';

export interface LockedCallOptions {
  /** Carried into lock events and logs. */
  readonly requestId?: RequestIdSource;
  /** Called once, only if a key has to be waited for, with a function that cancels the wait (a client that left). */
  readonly cancelWhen?: (cancel: (reason: Error) => void) => void;
}

/**
 * A cold Observable that acquires the keys when subscribed, runs `work` inside the lock scope, and releases
 * when the work completes, errors or is unsubscribed (an HTTP client that disconnects from an SSE stream).
 * Completion and errors are forwarded only after the release, so whoever sees the result can take the lock.
 * If a lock is lost while the work runs, the stream errors at once with that LockLostError.
 */
export function lockedObservable<T>(
  service: LockService,
  resolveKeys: () => readonly string[],
  options: LockOptions,
  work: (locks: LockSet) => Observable<T>,
  { requestId, cancelWhen }: LockedCallOptions = {},
): Observable<T> {
  return new Observable<T>((subscriber) => {
    let locks: LockSet | undefined;
    let inner: Subscription | undefined;
    // A subscriber that leaves while still queued (client disconnect) cancels the wait. The controller is made
    // only when a key has to be waited for: most requests get their lock at once.
    let acquiring = true;
    let left = false;
    let cancelWait: AbortController | undefined;
    const leftWhileWaiting = () => new Error('the caller unsubscribed while waiting for the lock');
    const cancel = () => {
      if (!cancelWait) {
        const controller = (cancelWait = new AbortController());
        cancelWhen?.((reason) => controller.abort(reason));
      }
      if (left && !cancelWait.signal.aborted) cancelWait.abort(leftWhileWaiting());
      return cancelWait.signal;
    };
    // One lock scope for the acquisition and the work: promise continuations run in the scope they were
    // created in, so the work sees the locks registered below (one AsyncLocalStorage run per call).
    runInLockScope(() => {
      Promise.resolve()
        .then(() => LockSet.acquire(service, resolveKeys(), options, cancel))
        .finally(() => (acquiring = false))
        .then(
          (acquired) => {
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
              void acquired.release().then(() => subscriber.error(error));
              return;
            }
            inner = heldUntilDone(source, acquired, currentLockScope()!, (error) => error).subscribe(subscriber);
          },
          (error: unknown) => subscriber.error(error),
        );
    }, requestId);
    return () => {
      left = true;
      if (acquiring) cancelWait?.abort(leftWhileWaiting());
      inner?.unsubscribe();
      void locks?.release();
    };
  });
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
  return runInLockScope(async () => {
    const locks = await LockSet.acquire(service, keys, options);
    try {
      enterHandlerScope(locks);
      const lost = locks.signal();
      // A lock can be lost before the work starts (a slow grant); then the work does not run at all.
      lost.throwIfAborted();
      return await raceAbort(Promise.resolve(work()), lost, () => lost.reason);
    } finally {
      await locks.release();
    }
  });
}

/**
 * Holds `locks` while `source` runs: released when it completes, errors or is unsubscribed, and before
 * completion or an error is forwarded. Errors at once with the LockLostError when a lock is lost. The source
 * is subscribed in `scope`, so code it runs sees the locks. `mapError` rewrites the error it forwards.
 */
export function heldUntilDone<T>(source: Observable<T>, locks: LockSet, scope: LockScope, mapError: (error: unknown) => unknown): Observable<T> {
  return new Observable<T>((subscriber) => {
    const inner = lockScopeStorage.run(scope, () =>
      source.pipe(failWhenLost(locks)).subscribe({
        next: (value) => subscriber.next(value),
        error: (error: unknown) => void locks.release().then(() => subscriber.error(mapError(error))),
        complete: () => void locks.release().then(() => subscriber.complete()),
      }),
    );
    return () => {
      inner.unsubscribe();
      void locks.release();
    };
  });
}

/** Makes the locks visible to nested acquisitions, `LockService.current()` and `@CurrentLock()`. */
export function enterHandlerScope(locks: LockSet): void {
  locks.register();
  currentLockScope()!.handlerLockSet = locks;
}

/** Mirrors the source, but errors with the LockLostError as soon as one of the locks is lost. */
function failWhenLost<T>(locks: LockSet): MonoTypeOperatorFunction<T> {
  return (source) =>
    new Observable<T>((subscriber) => {
      const stopWatching = locks.onLost((error) => subscriber.error(error));
      if (subscriber.closed) return;
      const subscription = source.subscribe(subscriber);
      return () => {
        stopWatching();
        subscription.unsubscribe();
      };
    });
}
