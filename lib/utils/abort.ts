import { MAX_TIMER_DELAY } from './clock';

/**
 * Races `work` against `signal`. When the signal aborts first, rejects with `onAbort()` and leaves `work`
 * running (callers clean up after it themselves). Used so that no backend call can hang past a deadline:
 * ioredis, for one, queues commands without limit while it is offline.
 */
export function raceAbort<T>(work: Promise<T>, signal: AbortSignal, onAbort: () => unknown): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(onAbort());
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(onAbort());
    signal.addEventListener('abort', abort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', abort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener('abort', abort);
        reject(error);
      },
    );
  });
}

/**
 * Resolves after `ms`, or rejects with `signal.reason` when the signal aborts first.
 * The timer is ref'd on purpose: somebody awaits it, so the process must not exit underneath them.
 */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', abort);
        resolve();
      },
      Math.max(0, ms),
    );
    const abort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', abort, { once: true });
  });
}

/** A signal that aborts after `ms`, with `reason()` as its reason. Ref'd, like `delay`; call dispose() when done. */
export function timeoutSignal(ms: number, reason: () => unknown): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  // setTimeout fires at once for delays past 2^31-1 ms; treat those (and Infinity) as "never".
  if (!(ms <= MAX_TIMER_DELAY)) return { signal: controller.signal, dispose: () => undefined };
  const timer = setTimeout(() => controller.abort(reason()), Math.max(0, ms));
  return { signal: controller.signal, dispose: () => clearTimeout(timer) };
}
