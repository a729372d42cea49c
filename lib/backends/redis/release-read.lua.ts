import { lua, LUA_EXPIRING_MEMBERS, LUA_QUEUE, LUA_SERVER_TIME, LUA_WAKE_LOCK } from './lua-snippets';
import { RedisScript } from './redis-script';

/**
 * Read lock. KEYS: [1] readers, [2] queue, [3] queue expiry; ARGV: [1] owner token, [2] channel,
 * [3] '1' when the backend runs FIFO queues, else ''.
 * Returns 1 when our live entry was removed, 0 when it was gone or had already expired (then no longer
 * ours). Wakes waiters only when the last reader left: before that nothing new can enter.
 */
export const RELEASE_READ_SCRIPT = new RedisScript(
  'release-read',
  lua(
    LUA_SERVER_TIME,
    LUA_EXPIRING_MEMBERS,
    LUA_QUEUE,
    LUA_WAKE_LOCK,
    `
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
local _, now = server_time()
if tonumber(score) <= now then return 0 end
if live_members(KEYS[1], now) == 0 then wake_lock(KEYS[2], KEYS[3], ARGV[2], ARGV[3] == '1') end
return 1
`,
  ),
);
