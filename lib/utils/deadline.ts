import { MAX_TIMER_DELAY, monotonicNow } from './clock';

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
  return settleWithDeadline(work, ms, onTimeout, identity, rethrow);
}

/**
 * withDeadline for a deadline that may move later while `work` runs: `deadlineAt()` (monotonic ms) is read again
 * when the timer fires, and the timer re-armed if it moved. A renewal's answer still counts while validity is
 * left, and a second renewal beside it may have extended that validity meanwhile.
 */
export function withMovingDeadline<T>(
  work: Promise<T>,
  deadlineAt: () => number,
  onTimeout: () => unknown,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const check = () => {
      const left = deadlineAt() - monotonicNow();
      if (left <= 0) reject(onTimeout());
      else timer = setTimeout(check, Math.min(left, MAX_TIMER_DELAY));
    };
    check();
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
 * `withDeadline(work, ms, onTimeout).then(onValue, onError)` in one promise and one reaction (to `work` itself):
 * `onError` also gets `onTimeout()`'s error. `lazy`: the timer is armed one microtask later, and only if `work`
 * has not settled by then, so a backend that answers at once (memory) sets no timer at all; a network backend
 * never answers that fast, so its calls arm the timer at once.
 */
export function settleWithDeadline<T, R>(
  work: Promise<T>,
  ms: number,
  onTimeout: () => unknown,
  onValue: (value: T) => R | PromiseLike<R>,
  onError: (error: unknown) => R | PromiseLike<R>,
  lazy = false,
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
    const arm = () => {
      if (!settled) timer = setTimeout(() => settle(false, onTimeout()), Math.max(0, ms));
    };
    if (!lazy) arm();
    work.then(
      (value) => settle(true, value),
      (error: unknown) => settle(false, error),
    );
    if (lazy) afterMicrotask(arm);
  });
}

function identity<T>(value: T): T {
  return value;
}

function rethrow(error: unknown): never {
  throw error;
}
