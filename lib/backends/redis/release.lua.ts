import { lua, LUA_QUEUE, LUA_SERVER_TIME, LUA_WAKE_LOCK } from './lua-snippets';
import { RedisScript } from './redis-script';

/**
 * Exclusive (= write) lock. KEYS: [1] lock, [2] queue, [3] queue expiry; ARGV: [1] owner token, [2] channel,
 * [3] '1' when the backend runs FIFO queues, else ''.
 * Returns 1 when deleted, 0 when the lock is no longer ours. Compare and delete in one script: an expired
 * holder can never delete the next holder's lock. Then wakes the next waiter(s) (see LUA_WAKE_LOCK).
 * Without FIFO that is GET, DEL and PUBLISH.
 * The channel is an argument, not a key, because channels are not keys (it still shares the hash tag).
 */
export const RELEASE_SCRIPT = new RedisScript(
  'release',
  lua(
    `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
if ARGV[3] ~= '1' then
  redis.call('PUBLISH', ARGV[2], '*')
  return 1
end
`,
    LUA_SERVER_TIME,
    LUA_QUEUE,
    LUA_WAKE_LOCK,
    `
wake_lock(KEYS[2], KEYS[3], ARGV[2], true)
return 1
`,
  ),
);
