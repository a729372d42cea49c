import {
  lua,
  LUA_EXPIRING_MEMBERS,
  LUA_MARK_WAITED,
  LUA_NEXT_FENCE,
  LUA_QUEUE,
  LUA_SERVER_TIME,
  WAITED_SUFFIX,
} from './lua-snippets';
import { RedisScript } from './redis-script';

/**
 * Exclusive (= write) lock.
 * KEYS: [1] lock, [2] fence, [3] readers, [4] writers-waiting, [5] queue, [6] queue expiry.
 * ARGV: [1] owner token, [2] ttl ms, [3] how a busy caller waits: '' (it does not), 'intent' (register in
 *       writers-waiting, which holds new readers back) or 'queue' (FIFO entry), [4] waiter ttl ms,
 *       [5] how long in ms the fencing counter outlives the ttl (see LUA_NEXT_FENCE).
 * Returns {1, fencingToken} when granted, {0, ms until something may change (-1: unknown)} when busy.
 *
 * The lock is free when the lock key is absent, no reader is live, and no FIFO waiter is ahead of us.
 * Uncontended, that is EXISTS, SET, TIME and SET ... GET (the fencing counter) in this one round trip.
 * A caller that waits (join ~= '') marks a busy holder's value, and is granted a marked one (LUA_MARK_WAITED).
 */
export const ACQUIRE_SCRIPT = new RedisScript(
  'acquire',
  lua(
    LUA_NEXT_FENCE,
    `
local lock, fence, readers, waiting, queue, expiry = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local token, ttl, join = ARGV[1], ARGV[2], ARGV[3]

if redis.call('EXISTS', lock, readers, queue) == 0 then
  if join == '' then
    redis.call('SET', lock, token, 'PX', ttl)
  else
    redis.call('SET', lock, token .. '${WAITED_SUFFIX}', 'PX', ttl)
    if join == 'intent' then redis.call('ZREM', waiting, token) end
  end
  return {1, next_fence(fence, tonumber(ttl), tonumber(ARGV[5]))}
end
`,
    LUA_SERVER_TIME,
    LUA_EXPIRING_MEMBERS,
    LUA_QUEUE,
    LUA_MARK_WAITED,
    `
local waiter_ttl = tonumber(ARGV[4])
local _, now = server_time()
local entry = 'w' .. token
local wait_hint = redis.call('PTTL', lock)
local free = wait_hint == -2
if free and live_members(readers, now) > 0 then
  free = false
  wait_hint = first_expiry_in(readers, now)
end
if redis.call('EXISTS', queue) == 1 then
  purge_queue(queue, expiry, now)
  local head = redis.call('LINDEX', queue, 0)
  if head and head ~= entry and free then
    free = false
    wait_hint = -1
  end
end

if free then
  local value = token
  if join ~= '' then value = token .. '${WAITED_SUFFIX}' end
  redis.call('SET', lock, value, 'PX', ttl)
  if join == 'queue' then leave_queue(queue, expiry, entry) end
  if join == 'intent' then redis.call('ZREM', waiting, token) end
  return {1, next_fence(fence, tonumber(ttl), tonumber(ARGV[5]))}
end
if join == 'queue' then join_queue(queue, expiry, entry, now, waiter_ttl) end
if join == 'intent' then put_member(waiting, token, now + waiter_ttl) end
if join ~= '' and wait_hint ~= -2 then mark_waited(lock) end
return {0, wait_hint}
`,
  ),
);

export type AcquireReply =
  | { readonly granted: true; readonly fencingToken: bigint }
  /** `retryIn`: ms until the holder's (or the earliest blocking member's) expiry; -1 when unknown. */
  | { readonly granted: false; readonly retryIn: number };

/** Parses any acquire script's reply; `undefined` when it has another shape (a foreign script under our sha?). */
export function parseAcquireReply(reply: unknown): AcquireReply | undefined {
  if (!Array.isArray(reply) || reply.length !== 2) return undefined;
  const [granted, value] = reply as unknown[];
  if (granted === 1 && typeof value === 'string' && isDecimal(value)) {
    return { granted: true, fencingToken: BigInt(value) };
  }
  if (granted === 0 && typeof value === 'number') return { granted: false, retryIn: value };
  return undefined;
}

/** Only digits, at least one (BigInt alone would also take '', whitespace, '0x..'). A loop: this runs per grant. */
function isDecimal(text: string): boolean {
  if (text.length === 0) return false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 48 || code > 57) return false;
  }
  return true;
}
