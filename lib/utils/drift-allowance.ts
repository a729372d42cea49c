/** The share of a ttl that the server's clock may run ahead of ours over it (Redlock's clock-drift factor). */
export const DEFAULT_DRIFT_FACTOR = 0.01;

/**
 * What every backend takes off a grant's validity for clock-rate drift between us and the server: `driftFactor`
 * of the ttl, plus 2 ms because servers keep expiry in whole milliseconds and may expire a little early. Capped at
 * half the ttl, so that a short ttl still leaves a usable grant (a 1 ms ttl would otherwise arrive expired).
 */
export function driftAllowance(ttl: number, driftFactor = DEFAULT_DRIFT_FACTOR): number {
  return Math.min(ttl * driftFactor + 2, ttl / 2);
}
