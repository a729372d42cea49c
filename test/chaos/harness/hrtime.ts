/**
 * process.hrtime.bigint() reads CLOCK_MONOTONIC: one clock for every process on the machine, which is what
 * lets the parent order critical sections recorded by different workers.
 */
export const hrNow = (): bigint => process.hrtime.bigint();

/** The monotonic instant of an epoch-ms expiry (a LockHandle's expiresAt), read now. */
export function hrValidUntil(expiresAtEpochMs: number): bigint {
  return hrNow() + BigInt(Math.round((expiresAtEpochMs - Date.now()) * 1e6));
}

/** Milliseconds from `from` to `to` (hrtime strings or bigints). */
export function msBetween(from: bigint | string, to: bigint | string): number {
  return Number(BigInt(to) - BigInt(from)) / 1e6;
}
