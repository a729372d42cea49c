import { RedisScript } from './redis-script';

/**
 * KEYS[1] lock, KEYS[2] fencing counter; ARGV[1] owner token, ARGV[2] ttl in ms.
 * Returns {1, fencingToken} when granted, {0, holder's PTTL} when busy.
 *
 * The fencing token is max(counter + 1, server TIME in microseconds), written back to the counter.
 * The counter alone makes tokens strictly increasing; the clock keeps them increasing after a restart
 * without persistence wiped the counter (as long as the server clock does not go backwards).
 * Microseconds since 1970 stay below 2^53 until the year 2255, so Lua's doubles hold them exactly;
 * the token travels as a decimal string because Redis would truncate a Lua number reply to an integer
 * anyway and the caller parses it as a BigInt.
 */
export const ACQUIRE_SCRIPT = new RedisScript(
  'acquire',
  `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local now = redis.call('TIME')
  local micros = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local last = tonumber(redis.call('GET', KEYS[2])) or 0
  local token = string.format('%.0f', math.max(last + 1, micros))
  redis.call('SET', KEYS[2], token)
  return {1, token}
end
return {0, redis.call('PTTL', KEYS[1])}
`,
);

export type AcquireReply =
  | { readonly granted: true; readonly fencingToken: bigint }
  | { readonly granted: false; readonly holderPttl: number };

/** Parses the script's reply; `undefined` when it has another shape (a foreign script under our sha?). */
export function parseAcquireReply(reply: unknown): AcquireReply | undefined {
  if (!Array.isArray(reply) || reply.length !== 2) return undefined;
  const [granted, value] = reply as unknown[];
  if (granted === 1 && typeof value === 'string' && /^\d+$/.test(value)) {
    return { granted: true, fencingToken: BigInt(value) };
  }
  if (granted === 0 && typeof value === 'number') return { granted: false, holderPttl: value };
  return undefined;
}
