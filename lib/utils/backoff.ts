/** Upper bound of the pause before a retry when the server keeps failing, so nothing spins. */
const MAX_BACKOFF_MS = 1_000;

/** ms to wait before the retry that follows `failures` failures in a row: 100, 200, 400, 800, then 1 000. */
export function retryBackoff(failures: number): number {
  return Math.min(MAX_BACKOFF_MS, 50 * 2 ** failures);
}
