import { lua, LUA_EXPIRING_MEMBERS, LUA_NEXT_FENCE, LUA_SERVER_TIME } from '../redis/lua-snippets';
import { RedisScript } from '../redis/redis-script';
import { LUA_REDLOCK_WAITERS } from './redlock-waiters.lua';

/**
 * Redlock's exclusive (= write) acquire on one instance.
 * KEYS: [1] lock, [2] fence, [3] readers, [4] waiters, [5] waiters expiry, [6] reservation (waiters:next).
 * ARGV: [1] owner token, [2] ttl ms, [3] ticket ('' = the caller does not wait), [4] waiter ttl ms,
 *       [5] fencing counter retention ms (see LUA_NEXT_FENCE), [6] handoff window ms.
 * Returns {1, fencingToken} when granted (and takes the caller's entry and reservation back), {0, ms until
 * something may change (-1: unknown)} when busy (and puts or refreshes the caller's entry when it waits, and
 * reserves the next turn when it is the head: see LUA_REDLOCK_WAITERS).
 * Uncontended: EXISTS, SET, ZREM, TIME and SET ... GET.
 */
export const REDLOCK_ACQUIRE_SCRIPT = new RedisScript(
  'redlock-acquire',
  lua(
    LUA_NEXT_FENCE,
    LUA_REDLOCK_WAITERS,
    `
local lock, fence, readers, waiters, expiry, nxt = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local token, ttl, ticket = ARGV[1], ARGV[2], ARGV[3]
local entry = 'w' .. token

local function grant(reserved)
  redis.call('SET', lock, token, 'PX', ttl)
  if ticket ~= '' then leave_waiters(waiters, expiry, entry) end
  if reserved then redis.call('DEL', nxt) end
  return {1, next_fence(fence, tonumber(ttl), tonumber(ttl) + tonumber(ARGV[5]))}
end

if redis.call('EXISTS', lock, readers, nxt) == 0 then return grant(false) end
`,
    LUA_SERVER_TIME,
    LUA_EXPIRING_MEMBERS,
    `
local _, now = server_time()
local wait_hint = redis.call('PTTL', lock)
local hold = wait_hint
if wait_hint == -2 then
  if live_members(readers, now) == 0 then
    local reserved = redis.call('GET', nxt)
    if not reserved then return grant(false) end
    if reserved == entry then return grant(true) end
    wait_hint = redis.call('PTTL', nxt)
    hold = 0
  else
    wait_hint = first_expiry_in(readers, now)
    hold = wait_hint
  end
end
if ticket ~= '' then
  join_waiters(waiters, expiry, entry, ticket, now + tonumber(ARGV[4]))
  reserve_if_head(waiters, expiry, nxt, entry, now, hold, tonumber(ARGV[6]))
end
return {0, wait_hint}
`,
  ),
);

/**
 * Redlock's read acquire on one instance: KEYS and ARGV as REDLOCK_ACQUIRE_SCRIPT, same replies.
 * A reader enters when no writer holds the lock, no writer has reserved the next turn, and no live writer
 * began to wait before it (ticket order; without a ticket, any waiting writer): so readers cannot starve a
 * writer, as the writers' intents of the single-server scripts ensure too.
 */
export const REDLOCK_ACQUIRE_READ_SCRIPT = new RedisScript(
  'redlock-acquire-read',
  lua(
    LUA_SERVER_TIME,
    LUA_NEXT_FENCE,
    LUA_EXPIRING_MEMBERS,
    LUA_REDLOCK_WAITERS,
    `
local lock, fence, readers, waiters, expiry, nxt = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local token, ttl, ticket = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local entry = 'r' .. token
local _, now = server_time()

local wait_hint = redis.call('PTTL', lock)
local free = wait_hint == -2
if free and redis.call('EXISTS', nxt) == 1 then
  free = false
  wait_hint = redis.call('PTTL', nxt)
end
if free and redis.call('EXISTS', waiters) == 1 then
  purge_waiters(waiters, expiry, now)
  local upto = '+inf'
  if ticket ~= '' then upto = ticket end
  for _, other in ipairs(redis.call('ZRANGEBYSCORE', waiters, '-inf', upto)) do
    if string.sub(other, 1, 1) == 'w' then
      free = false
      wait_hint = -1
      break
    end
  end
end

if free then
  put_member(readers, token, now + ttl)
  if ticket ~= '' then leave_waiters(waiters, expiry, entry) end
  return {1, next_fence(fence, ttl, ttl + tonumber(ARGV[5]))}
end
if ticket ~= '' then join_waiters(waiters, expiry, entry, ticket, now + tonumber(ARGV[4])) end
return {0, wait_hint}
`,
  ),
);
