import {
  lua,
  LUA_EXPIRING_MEMBERS,
  LUA_QUEUE,
  LUA_SERVER_TIME,
  LUA_WAKE_LOCK,
  LUA_WAKE_SEMAPHORE,
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
