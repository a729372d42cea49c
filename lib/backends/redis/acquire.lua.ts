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
 * KEYS: [1] lock, [2] fence, [3] readers, [4] queue, [5] queue expiry, [6] writers-waiting ('intent' only).
 * ARGV: [1] owner token, [2] ttl ms (the PX), [3] how long in ms the fencing counter lives after a grant from
 *       the clock: the ttl plus its retention (next_fence's `lives`, see LUA_NEXT_FENCE), [4] how a busy caller waits: absent or '' (it does not), 'intent' (register in
 *       writers-waiting, which holds new readers back), 'queue' (FIFO entry 'w' .. token, woken by a message)
 *       or 'handoff' (FIFO entry 'g' .. token .. ' ' .. px .. ' ' .. ARGV[6]: a release grants it the lock,
 *       see LUA_HANDOFF), [5] waiter ttl ms, [6] handoff only: '<check> <grant channel>' (see LUA_HANDOFF).
 *       A try (tryAcquire, and LockService's first attempt) sends only what it reads: KEYS 1-5, ARGV 1-3.
 * Returns the fencing token (a string) when granted, {0, ms until something may change (-1: unknown),
 * server ms} when busy.
 *
 * A 'handoff' waiter that finds the lock already its own was granted it by a release whose message it has
 * not seen (lost on a reconnect, or still on its way): it gets the grant again, with its ttl from now and a
 * new fencing token, which is larger than the one in that message (tokens may skip numbers, never repeat).
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
local lock, fence, readers, queue = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, ttl, join = ARGV[1], ARGV[2], ARGV[4] or ''

if redis.call('EXISTS', lock, readers, queue) == 0 then
  if join == '' then
    redis.call('SET', lock, token, 'PX', ttl)
  else
    redis.call('SET', lock, token .. '${WAITED_SUFFIX}', 'PX', ttl)
    if join == 'intent' then redis.call('ZREM', KEYS[6], token) end
  end
  return next_fence(fence, ttl, ARGV[3])
end
-- A try (it does not wait) at a held lock: nothing to register, no queue to look at.
if join == '' then
  local pttl = redis.call('PTTL', lock)
  if pttl ~= -2 then return {0, pttl} end
end
`,
    LUA_SERVER_TIME,
    LUA_EXPIRING_MEMBERS,
    LUA_QUEUE,
    LUA_MARK_WAITED,
    `
local expiry, waiting, waiter_ttl = KEYS[5], KEYS[6], tonumber(ARGV[5])
local _, now = server_time()
local queued = join == 'queue' or join == 'handoff'
local entry = 'w' .. token
if join == 'handoff' then entry = 'g' .. token .. ' ' .. ttl .. ' ' .. ARGV[6] end
local wait_hint = redis.call('PTTL', lock)
if join == 'handoff' and wait_hint ~= -2 then
  local value = redis.call('GET', lock)
  if value == token or value == token .. '${WAITED_SUFFIX}' then
    redis.call('PEXPIRE', lock, ttl)
    return next_fence(fence, ttl, ARGV[3])
  end
end
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
  if queued then leave_queue(queue, expiry, entry) end
  if join == 'intent' then redis.call('ZREM', waiting, token) end
  return next_fence(fence, ttl, ARGV[3])
end
if queued then join_queue(queue, expiry, entry, now, waiter_ttl) end
if join == 'intent' then put_member(waiting, token, now + waiter_ttl) end
if join ~= '' and wait_hint ~= -2 then mark_waited(lock) end
return {0, wait_hint, now}
`,
  ),
);

export type AcquireReply =
  | { readonly granted: true; readonly fencingToken: bigint }
  /**
   * `retryIn`: ms until the holder's (or the earliest blocking member's) expiry; -1 when unknown.
   * `serverTime`: the server's clock (ms) when it answered, if the script tells it (see handoffValidityEnd).
   */
  | { readonly granted: false; readonly retryIn: number; readonly serverTime?: number };

/**
 * Parses any acquire script's reply; `undefined` when it has another shape (a foreign script under our sha?).
 * ACQUIRE_SCRIPT answers a grant with the bare token (no table to build and send on the hot path); the other
 * acquire scripts, and Redlock's, with {1, token}.
 */
export function parseAcquireReply(reply: unknown): AcquireReply | undefined {
  if (typeof reply === 'string') return isDecimal(reply) ? { granted: true, fencingToken: BigInt(reply) } : undefined;
  if (!Array.isArray(reply) || reply.length < 2 || reply.length > 3) return undefined;
  const [granted, value, serverTime] = reply as unknown[];
  if (granted === 1 && reply.length === 2 && typeof value === 'string' && isDecimal(value)) {
    return { granted: true, fencingToken: BigInt(value) };
  }
  if (granted === 0 && typeof value === 'number') {
    if (reply.length === 2) return { granted: false, retryIn: value };
    if (typeof serverTime === 'number') return { granted: false, retryIn: value, serverTime };
  }
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
