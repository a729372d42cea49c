import { lua, LUA_EXPIRING_MEMBERS, LUA_MARK_WAITED, LUA_NEXT_FENCE, LUA_QUEUE, LUA_SERVER_TIME } from './lua-snippets';
import { RedisScript } from './redis-script';

/**
 * Read (shared) lock.
 * KEYS: [1] lock, [2] fence, [3] readers, [4] writers-waiting, [5] queue, [6] queue expiry.
 * ARGV: [1] owner token, [2] ttl ms, [3] '' (a try), 'wait' (a waiter) or 'queue' (a waiter that joins the
 *       FIFO queue when busy), [4] waiter ttl ms,
 *       [5] fencing counter retention ms (see LUA_NEXT_FENCE).
 * Returns {1, fencingToken} or {0, ms until something may change (-1: unknown)}, like ACQUIRE_SCRIPT.
 *
 * A reader enters when no writer holds the lock, no writer is waiting (a live intent), and no writer is
 * queued ahead of it in FIFO mode: so a reader that arrives after a waiting writer waits behind it.
 */
export const ACQUIRE_READ_SCRIPT = new RedisScript(
  'acquire-read',
  lua(
    LUA_SERVER_TIME,
    LUA_NEXT_FENCE,
    LUA_EXPIRING_MEMBERS,
    LUA_QUEUE,
    LUA_MARK_WAITED,
    `
local lock, fence, readers, waiting, queue, expiry = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local token, ttl, join, waiter_ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local _, now = server_time()
local entry = 'r' .. token

local wait_hint = redis.call('PTTL', lock)
local free = wait_hint == -2
if free and live_members(waiting, now) > 0 then
  free = false
  wait_hint = first_expiry_in(waiting, now)
end
local position = false
if redis.call('EXISTS', queue) == 1 then
  purge_queue(queue, expiry, now)
  position = redis.call('LPOS', queue, entry)
  if free and position ~= 0 then
    -- Only readers may be ahead of us (the whole queue, if we are not in it yet).
    local last = -1
    if position then last = position - 1 end
    for _, other in ipairs(redis.call('LRANGE', queue, 0, last)) do
      if string.sub(other, 1, 1) ~= 'r' then
        free = false
        wait_hint = -1
        break
      end
    end
  end
end

if free then
  put_member(readers, token, now + ttl)
  if position then leave_queue(queue, expiry, entry) end
  return {1, next_fence(fence, ttl, ttl + tonumber(ARGV[5]))}
end
if join == 'queue' then join_queue(queue, expiry, entry, now, waiter_ttl) end
-- A waiter behind a writer: that writer's release must publish.
if join ~= '' and redis.call('EXISTS', lock) == 1 then mark_waited(lock) end
return {0, wait_hint}
`,
  ),
);
