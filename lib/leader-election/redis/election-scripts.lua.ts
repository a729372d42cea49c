import { lua, LUA_NEXT_FENCE } from '../../backends/redis/lua-snippets';
import { RedisScript } from '../../backends/redis/redis-script';
import type { LeaderInfo } from '../election-backend.interface';

/*
 * Redis elections. Keys share the election's hash tag (redis-keys.ts' encodeKeyPart), like a lock's:
 *   <ns>:{<enc(name)>}:leader    HASH token, value, term, step (proclaims so far in this term); PX = ttl, renewed
 *                                by the leader's watchdog
 *   <ns>:{<enc(name)>}:fence     term counter (LUA_NEXT_FENCE: max(counter + 1, server clock in µs)); PX = fence ttl
 *   <ns>:{<enc(name)>}:changed   pub/sub channel: a leader was granted, proclaimed or resigned; each message says
 *                                what changed and its place in the story (ElectionChange), so observers report
 *                                every change in order
 * The fence key expires a while after the last leader did: terms keep rising afterwards because the clock is
 * their floor, so an idle election leaves nothing behind.
 */

/**
 * KEYS: [1] leader, [2] fence. ARGV: [1] token, [2] value, [3] ttl ms, [4] fence ttl ms, [5] channel.
 * Returns {1, term} when we lead (also when a retried call finds us leading already), else {0, ms the leader has left}.
 */
export const CAMPAIGN_SCRIPT = new RedisScript(
  'election-campaign',
  lua(
    LUA_NEXT_FENCE,
    `
local leader, fence, channel = KEYS[1], KEYS[2], ARGV[5]
local token, value, ttl, fence_ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local current = redis.call('HGET', leader, 'token')
if current == token then return {1, redis.call('HGET', leader, 'term')} end
if current then return {0, redis.call('PTTL', leader)} end
-- The counter outlives the leader key by fence_ttl (and longer if it ran ahead of the clock).
local term = next_fence(fence, tonumber(ttl), tonumber(ttl) + tonumber(fence_ttl))
redis.call('DEL', leader)
redis.call('HSET', leader, 'token', token, 'value', value, 'term', term, 'step', 0)
redis.call('PEXPIRE', leader, ttl)
redis.call('PUBLISH', channel, 'elected ' .. term .. ' ' .. value)
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

/** KEYS: [1] leader. ARGV: [1] token, [2] value, [3] channel. 1 when still ours and updated, else 0. */
export const PROCLAIM_SCRIPT = new RedisScript(
  'election-proclaim',
  `
local fields = redis.call('HMGET', KEYS[1], 'token', 'term')
if fields[1] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'value', ARGV[2])
local step = redis.call('HINCRBY', KEYS[1], 'step', 1)
redis.call('PUBLISH', ARGV[3], 'proclaimed ' .. fields[2] .. ' ' .. step .. ' ' .. ARGV[2])
return 1
`,
);

/** KEYS: [1] leader. ARGV: [1] token, [2] channel. 1 when it was ours and is deleted, else 0 (never deletes another's). */
export const RESIGN_SCRIPT = new RedisScript(
  'election-resign',
  `
local fields = redis.call('HMGET', KEYS[1], 'token', 'term')
if fields[1] ~= ARGV[1] then return 0 end
redis.call('PUBLISH', ARGV[2], 'resigned ' .. fields[2])
redis.call('DEL', KEYS[1])
return 1
`,
);

/** KEYS: [1] leader. Returns {value, term, pttl, step}, or an empty array when nobody leads. */
export const READ_LEADER_SCRIPT = new RedisScript(
  'election-read',
  `
local fields = redis.call('HMGET', KEYS[1], 'value', 'term', 'step')
if not fields[2] then return {} end
return {fields[1], fields[2], redis.call('PTTL', KEYS[1]), fields[3] or '0'}
`,
);

/**
 * A change of an election, in the order of its story: a term's leader, then each of its proclaims (step 1, 2, ..),
 * then its end (step Infinity). `leader` is who leads after it (null: nobody).
 */
export interface ElectionChange {
  readonly term: bigint;
  readonly step: number;
  readonly leader: LeaderInfo | null;
}

/** Whether `change` comes later in the story than `than`. */
export function isLater(change: ElectionChange, than: ElectionChange | undefined): boolean {
  if (!than) return true;
  return change.term !== than.term ? change.term > than.term : change.step > than.step;
}

/**
 * The channel's messages: 'elected <term> <value>', 'proclaimed <term> <step> <value>' (the value is the rest
 * of the text, spaces included) and 'resigned <term>'. undefined for anything else, e.g. the bare words an
 * older version sent: observers then read the leader instead.
 */
export function parseElectionMessage(message: string): ElectionChange | undefined {
  const [kind, term, third] = message.split(' ', 3);
  if (!term || !/^[0-9]+$/.test(term)) return undefined;
  const at = BigInt(term);
  if (kind === 'resigned') return { term: at, step: Infinity, leader: null };
  // The value is what follows the fields before it and their spaces.
  const after = (fields: string[]) => message.slice(fields.join(' ').length + 1);
  if (kind === 'elected') return { term: at, step: 0, leader: { value: after([kind, term]), term: at } };
  if (kind === 'proclaimed' && third !== undefined && /^[0-9]+$/.test(third))
    return { term: at, step: Number(third), leader: { value: after([kind, term, third]), term: at } };
  return undefined;
}
