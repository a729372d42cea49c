import type { LockHandle } from '../../../lib/lock-handle';
import { hrNow, hrValidUntil } from './hrtime';

/** Resolves when `signal` aborts, or after `ms`. */
export function abortedWithin(signal: AbortSignal, ms: number): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Keeps the end of validity the library promises for `lock` (it moves with each renewal). */
export function trackValidity(lock: LockHandle): { current(): bigint; stop(): void } {
  let validUntil = hrValidUntil(lock.expiresAt);
  const subscription = lock.renewals$.subscribe({
    next: (renewal) => {
      if (renewal.type === 'renewed') validUntil = hrValidUntil(renewal.expiresAt);
    },
    error: () => undefined,
  });
  return { current: () => validUntil, stop: () => subscription.unsubscribe() };
}

export function busyWait(ms: number): void {
  const end = hrNow() + BigInt(Math.round(ms * 1e6));
  while (hrNow() < end) {
    // The event loop is blocked on purpose: no timer, no renewal, no I/O callback runs meanwhile.
  }
}
