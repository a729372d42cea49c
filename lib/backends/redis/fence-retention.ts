/**
 * How long in ms a key's fencing counter outlives the lock's ttl by default (see LUA_NEXT_FENCE). Tokens keep
 * increasing after the counter expired as long as the server's clock does not step back by more than the ttl
 * plus this; a minute covers NTP steps and VM resumes, and leaves at most a minute of residue per idle name.
 */
export const DEFAULT_FENCE_RETENTION = 60_000;

/** Validates a `fenceRetention` option: a whole number of ms, 0 or more. */
export function fenceRetentionOf(owner: string, value: number | undefined): number {
  const retention = value ?? DEFAULT_FENCE_RETENTION;
  if (!Number.isSafeInteger(retention) || retention < 0) {
    throw new TypeError(`${owner}: fenceRetention must be a whole number of ms >= 0, got ${String(value)}.`);
  }
  return retention;
}
