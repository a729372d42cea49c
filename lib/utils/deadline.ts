import { MAX_TIMER_DELAY } from './clock';

const settledPromise = Promise.resolve();

/**
 * Runs `fn` one microtask later, after the reactions already queued (e.g. to a promise a backend returned
 * settled). One promise, where `Promise.resolve().then()` makes two and `queueMicrotask` an async resource.
 */
export function afterMicrotask(fn: () => void): void {
  void settledPromise.then(fn);
}

/**
 * Rejects with `onTimeout()` if `work` has not settled within `ms`. `work` keeps running; callers handle late
 * results. One timer and no AbortController: this sits on the hot path of every acquire and release.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, onTimeout: () => unknown): Promise<T> {
  if (!(ms <= MAX_TIMER_DELAY)) return work;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(onTimeout()), Math.max(0, ms));
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * `withDeadline(work, ms, onTimeout).then(onValue, onError)`, with the timer armed one microtask later, and only if
 * `work` has not settled by then: a backend that answers at once (memory) then sets no timer at all. The callbacks
 * run in the reaction to `work` itself, one promise fewer than a `.then()` on top. Releases go through here.
 */
export function settleWithLazyDeadline<T, R>(
  work: Promise<T>,
  ms: number,
  onTimeout: () => unknown,
  onValue: (value: T) => R,
  onError: (error: unknown) => R,
): Promise<R> {
  if (!(ms <= MAX_TIMER_DELAY)) return work.then(onValue, onError);
  return new Promise<R>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const settle = (outcome: boolean, value: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      try {
        resolve(outcome ? onValue(value as T) : onError(value));
      } catch (error) {
        reject(error);
      }
    };
    work.then(
      (value) => settle(true, value),
      (error: unknown) => settle(false, error),
    );
    afterMicrotask(() => {
      if (!settled) timer = setTimeout(() => settle(false, onTimeout()), ms);
    });
  });
}
