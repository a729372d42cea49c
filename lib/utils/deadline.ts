const MAX_TIMER_DELAY = 2_147_483_647;

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
