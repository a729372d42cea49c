import { DEFAULT_DRIFT_FACTOR, driftAllowance } from '../../utils/drift-allowance';

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
export function validityEnd(startedAt: number, ttl: number, driftFactor = DEFAULT_DRIFT_FACTOR): number {
  return startedAt + ttl - driftAllowance(ttl, driftFactor);
}

/**
 * When a lock handed to us by a release (see LUA_HANDOFF) is certainly still ours, on our monotonic clock.
 * The grant message comes after the grant, by an unknown delay, so its arrival time is no bound. Instead:
 * our last answered attempt was sent at `sentAt` (ours) and read the server's clock as `serverAt` (ms), so
 * that server instant was at or after `sentAt` on our clock; the grant happened `grantedAt - serverAt` server
 * ms later (the message carries `grantedAt`). Both server times are whole ms, rounded down (hence the - 1),
 * and the server's clock may run faster than ours over that span too (the drift factor applies to it as well).
 */
export function handoffValidityEnd(
  sentAt: number,
  serverAt: number,
  grantedAt: number,
  ttl: number,
  driftFactor = DEFAULT_DRIFT_FACTOR,
): number {
  const later = grantedAt - serverAt;
  const grantedNoEarlierThan = sentAt + (later > 0 ? later * (1 - driftFactor) - 1 : later - 1);
  return validityEnd(grantedNoEarlierThan, ttl, driftFactor);
}
