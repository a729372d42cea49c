/**
 * When a lock granted (or extended) with `ttl` ms is certainly still ours, on our monotonic clock.
 *
 * `startedAt` is `performance.now()` taken just before sending the request that won: Redis starts the PX
 * countdown after it received that request, so our deadline can only be early, never late.
 * We subtract a drift allowance of `driftFactor` (default 1 %) of the ttl + 2 ms because the countdown runs on
 * the server's clock, which may tick a little faster than ours (Redlock's clock-drift factor), and Redis keeps
 * expiry in whole milliseconds and may expire a key up to a millisecond early (the 2 ms).
 * For very short ttls the allowance is capped at half the ttl, so a grant is still usable at all.
 */
export const DEFAULT_DRIFT_FACTOR = 0.01;

export function validityEnd(startedAt: number, ttl: number, driftFactor = DEFAULT_DRIFT_FACTOR): number {
  return startedAt + ttl - driftAllowance(ttl, driftFactor);
}

export function driftAllowance(ttl: number, driftFactor = DEFAULT_DRIFT_FACTOR): number {
  return Math.min(ttl * driftFactor + 2, ttl / 2);
}
