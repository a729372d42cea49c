import { raceAbort, timeoutSignal } from '../backends/shared/abort';

/** Rejects with `onTimeout()` if `work` has not settled within `ms`. `work` keeps running; callers handle late results. */
export async function withDeadline<T>(work: Promise<T>, ms: number, onTimeout: () => unknown): Promise<T> {
  if (ms === Infinity) return work;
  const deadline = timeoutSignal(ms, onTimeout);
  try {
    return await raceAbort(work, deadline.signal, () => deadline.signal.reason);
  } finally {
    deadline.dispose();
  }
}
