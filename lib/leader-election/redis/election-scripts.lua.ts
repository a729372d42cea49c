import { lua, LUA_NEXT_FENCE } from '../../backends/redis/lua-snippets';
import { RedisScript } from '../../backends/redis/redis-script';

/*
 * Redis elections. Keys share the election's hash tag (redis-keys.ts' encodeKeyPart), like a lock's:
 *   <ns>:{<enc(name)>}:leader    HASH token, value, term; PX = ttl, renewed by the leader's watchdog
 *   <ns>:{<enc(name)>}:fence     term counter (LUA_NEXT_FENCE: max(counter + 1, server clock in µs)); PX = fence ttl
 *   <ns>:{<enc(name)>}:changed   pub/sub channel: a leader was granted, proclaimed or resigned
 * The fence key expires a while after the last leader did: terms keep rising afterwards because the clock is
 * their floor, so an idle election leaves nothing behind.
 */

/**
 * KEYS: [1] leader, [2] fence, [3] channel. ARGV: [1] token, [2] value, [3] ttl ms, [4] fence ttl ms.
 * Returns {1, term} when we lead (also when a retried call finds us leading already), else {0, ms the leader has left}.
 */
export const CAMPAIGN_SCRIPT = new RedisScript(
  'election-campaign',
  lua(
    LUA_NEXT_FENCE,
    `
local leader, fence, channel = KEYS[1], KEYS[2], KEYS[3]
local token, value, ttl, fence_ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local current = redis.call('HGET', leader, 'token')
if current == token then return {1, redis.call('HGET', leader, 'term')} end
if current then return {0, redis.call('PTTL', leader)} end
-- The counter outlives the leader key by fence_ttl (and longer if it ran ahead of the clock).
local term = next_fence(fence, tonumber(ttl), tonumber(ttl) + tonumber(fence_ttl))
redis.call('DEL', leader)
redis.call('HSET', leader, 'token', token, 'value', value, 'term', term)
redis.call('PEXPIRE', leader, ttl)
redis.call('PUBLISH', channel, 'elected')
return {1, term}
`,
  ),
);

/** KEYS: [1] leader, [2] fence. ARGV: [1] token, [2] ttl ms, [3] fence ttl ms. 1 when still ours and extended, else 0. */
export const RENEW_LEADER_SCRIPT = new RedisScript(
  'election-renew',
  `
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
-- GT: never shorten what next_fence set for a counter that ran ahead of the clock.
redis.call('PEXPIRE', KEYS[2], ARGV[2] + ARGV[3], 'GT')
return 1
`,
);

/** KEYS: [1] leader, [2] channel. ARGV: [1] token, [2] value. 1 when still ours and updated, else 0. */
export const PROCLAIM_SCRIPT = new RedisScript(
  'election-proclaim',
  `
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'value', ARGV[2])
redis.call('PUBLISH', KEYS[2], 'proclaimed')
return 1
`,
);

/** KEYS: [1] leader, [2] channel. ARGV: [1] token. 1 when it was ours and is deleted, else 0 (never deletes another's). */
export const RESIGN_SCRIPT = new RedisScript(
  'election-resign',
  `
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', KEYS[2], 'resigned')
return 1
`,
);

/** KEYS: [1] leader. Returns {value, term, pttl}, or an empty array when nobody leads. */
export const READ_LEADER_SCRIPT = new RedisScript(
  'election-read',
  `
local fields = redis.call('HMGET', KEYS[1], 'value', 'term')
if not fields[2] then return {} end
return {fields[1], fields[2], redis.call('PTTL', KEYS[1])}
`,
);
