import {
  lua,
  LUA_EXPIRING_MEMBERS,
  LUA_HANDOFF,
  LUA_NEXT_FENCE,
  LUA_QUEUE,
  LUA_SERVER_TIME,
  LUA_WAKE_LOCK,
  LUA_WAKE_SEMAPHORE,
  WAITED_SUFFIX,
} from './lua-snippets';
import { RedisScript } from './redis-script';

/**
 * A waiter of the lock gives up (deadline, close). KEYS: [1] writers-waiting, [2] queue, [3] queue expiry;
 * ARGV: [1] queue entry (kind letter + token), [2] channel, [3] 'intent' or 'queue'.
 * Removing a writer's intent may let readers in; removing a queue entry may make the next one the head:
 * so it wakes them. If this never runs (the process died), the entry expires after the waiter ttl.
 */
export const LEAVE_LOCK_SCRIPT = new RedisScript(
  'leave-lock',
  lua(
    LUA_SERVER_TIME,
    LUA_EXPIRING_MEMBERS,
    LUA_QUEUE,
    LUA_WAKE_LOCK,
    `
local _, now = server_time()
if ARGV[3] == 'intent' then
  if redis.call('ZREM', KEYS[1], string.sub(ARGV[1], 2)) == 1 and live_members(KEYS[1], now) == 0 then
    redis.call('PUBLISH', ARGV[2], '*')
  end
  return 1
end
if redis.call('LREM', KEYS[2], 1, ARGV[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[3], ARGV[1])
wake_lock(KEYS[2], KEYS[3], ARGV[2], true)
return 1
`,
  ),
);

/**
 * A handoff writer (see LUA_HANDOFF) gives up. KEYS: [1] queue, [2] queue expiry, [3] lock, [4] fence,
 * [5] readers; ARGV: [1] queue entry, [2] channel, [3] owner token, [4] fencing counter retention ms.
 * Returns 1 when the entry was taken back, 2 when a release had already granted us the lock (our message was
 * still on its way, or lost): that grant is released at once, so giving up never leaves a held lock behind;
 * 0 when neither. Taking back the head's entry of a free lock hands it to the next waiter.
 */
export const LEAVE_HANDOFF_SCRIPT = new RedisScript(
  'leave-handoff',
  lua(
    LUA_SERVER_TIME,
    LUA_NEXT_FENCE,
    LUA_EXPIRING_MEMBERS,
    LUA_QUEUE,
    LUA_WAKE_LOCK,
    LUA_HANDOFF,
    `
local queue, expiry, lock, fence, readers = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local channel, token, retain = ARGV[2], ARGV[3], tonumber(ARGV[4])
if redis.call('LREM', queue, 1, ARGV[1]) == 1 then
  redis.call('ZREM', expiry, ARGV[1])
  if redis.call('EXISTS', lock) == 1 then return 1 end
  local _, now = server_time()
  if live_members(readers, now) > 0 then
    wake_lock(queue, expiry, channel, true)
  else
    hand_off(lock, fence, queue, expiry, channel, retain)
  end
  return 1
end
local value = redis.call('GET', lock)
if value ~= token and value ~= token .. '${WAITED_SUFFIX}' then return 0 end
redis.call('DEL', lock)
if value ~= token then hand_off(lock, fence, queue, expiry, channel, retain) end
return 2
`,
  ),
);

/** The same for a semaphore's FIFO queue. KEYS: [1] holders, [2] queue, [3] queue expiry; ARGV: [1] entry, [2] channel, [3] permits. */
export const LEAVE_SEMAPHORE_SCRIPT = new RedisScript(
  'leave-semaphore',
  lua(
    LUA_SERVER_TIME,
    LUA_EXPIRING_MEMBERS,
    LUA_QUEUE,
    LUA_WAKE_SEMAPHORE,
    `
if redis.call('LREM', KEYS[2], 1, ARGV[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[3], ARGV[1])
wake_semaphore(KEYS[1], KEYS[2], KEYS[3], ARGV[2], tonumber(ARGV[3]), true)
return 1
`,
  ),
);
