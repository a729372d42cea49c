import { lua, LUA_EXPIRING_MEMBERS, LUA_SERVER_TIME } from './lua-snippets';
import { RedisScript } from './redis-script';

/**
 * Read lock or semaphore permit. KEYS: [1] the holders' ZSET; ARGV: [1] owner token, [2] new ttl ms.
 * Returns 1 when extended, 0 when our entry is gone or its expiry has passed: an expired entry is no longer
 * ours (someone may have entered in its place), so it is removed rather than revived.
 */
export const EXTEND_SHARED_SCRIPT = new RedisScript(
  'extend-shared',
  lua(
    LUA_SERVER_TIME,
    LUA_EXPIRING_MEMBERS,
    `
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return 0 end
local _, now = server_time()
if tonumber(score) <= now then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 0
end
put_member(KEYS[1], ARGV[1], now + tonumber(ARGV[2]))
return 1
`,
  ),
);
