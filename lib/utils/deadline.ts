import { MAX_TIMER_DELAY } from './clock';

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
 * withDeadline with its timer armed one microtask later, and only if `work` has not settled by then: a backend
 * that answers at once (memory) then sets no timer at all. Releases go through here.
 */
export function withLazyDeadline<T>(work: Promise<T>, ms: number, onTimeout: () => unknown): Promise<T> {
  if (!(ms <= MAX_TIMER_DELAY)) return work;
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    work.then(
      (value) => {
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        settled = true;
        clearTimeout(timer);
        reject(error);
      },
    );
    void Promise.resolve().then(() => {
      if (settled) return;
      timer = setTimeout(() => {
        settled = true;
        reject(onTimeout());
      }, ms);
    });
  });
}
