import { lua, LUA_EXPIRING_MEMBERS, LUA_NEXT_FENCE, LUA_QUEUE, LUA_SERVER_TIME } from './lua-snippets';
import { RedisScript } from './redis-script';

/**
 * Counting semaphore, apart from the lock of the same name (its own ZSET of holders).
 * KEYS: [1] holders, [2] fence, [3] queue, [4] queue expiry.
 * ARGV: [1] owner token, [2] ttl ms, [3] permits, [4] '' or 'queue', [5] waiter ttl ms,
 *       [6] fencing counter retention ms (see LUA_NEXT_FENCE).
 * Returns {1, fencingToken} or {0, ms until the earliest holder expires (-1: unknown)}.
 *
 * A holder is a member whose expiry lies ahead, so a crashed holder's permit frees after its ttl.
 * In FIFO mode the first `free permits` entries of the queue may enter, and a newcomer only if the whole
 * queue fits in the free permits.
 */
export const ACQUIRE_SEMAPHORE_SCRIPT = new RedisScript(
  'acquire-semaphore',
  lua(
    LUA_SERVER_TIME,
    LUA_NEXT_FENCE,
    LUA_EXPIRING_MEMBERS,
    LUA_QUEUE,
    `
local holders, fence, queue, expiry = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, ttl, permits, join, waiter_ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local _, now = server_time()
local entry = 's' .. token

local free = permits - live_members(holders, now)
local wait_hint = -1
if free <= 0 then wait_hint = first_expiry_in(holders, now) end
local position = false
if free > 0 and redis.call('EXISTS', queue) == 1 then
  purge_queue(queue, expiry, now)
  position = redis.call('LPOS', queue, entry)
  local ahead = position or redis.call('LLEN', queue)
  if ahead >= free then free = 0 end
end

if free > 0 then
  put_member(holders, token, now + ttl)
  if position then leave_queue(queue, expiry, entry) end
  return {1, next_fence(fence, ttl, ttl + tonumber(ARGV[6]))}
end
if join == 'queue' then join_queue(queue, expiry, entry, now, waiter_ttl) end
return {0, wait_hint}
`,
  ),
);
