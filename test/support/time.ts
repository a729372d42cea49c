import { performance } from 'node:perf_hooks';

/** Lets time pass (a ttl run out, a waiter settle in). Never used to decide an ordering the test asserts. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Blocks the event loop synchronously, as a CPU-bound handler or a long GC pause would. */
export function blockEventLoop(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    /* spin */
  }
}

/** Milliseconds since `start` (a performance.now() reading). */
export function since(start: number): number {
  return performance.now() - start;
}

/** `work`, or a rejection naming `what` if it has not settled within `ms`. The timer is always cleared. */
export async function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Settles to the value or the error, so a test can assert on a rejection after awaiting it. */
export function outcome<T>(work: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  return work.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

/**
 * Polls `condition` every 20 ms until it holds, for state that has no event to wait on (a key appearing on a
 * server, a subscriber count); rejects naming `what` after `timeoutMs`.
 */
export async function eventually(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20).unref());
  }
}
