import { lua, LUA_EXPIRING_MEMBERS, LUA_QUEUE, LUA_SERVER_TIME, LUA_WAKE_SEMAPHORE } from './lua-snippets';
import { RedisScript } from './redis-script';

/**
 * Semaphore. KEYS: [1] holders, [2] queue, [3] queue expiry; ARGV: [1] owner token, [2] channel, [3] permits,
 * [4] '1' when the backend runs FIFO queues, else ''.
 * Returns 1 when our live permit was returned, 0 when it was gone or had expired. Wakes as many waiters
 * as there are free permits.
 */
export const RELEASE_SEMAPHORE_SCRIPT = new RedisScript(
  'release-semaphore',
  lua(
    LUA_SERVER_TIME,
    LUA_EXPIRING_MEMBERS,
    LUA_QUEUE,
    LUA_WAKE_SEMAPHORE,
    `
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
local _, now = server_time()
if tonumber(score) <= now then return 0 end
wake_semaphore(KEYS[1], KEYS[2], KEYS[3], ARGV[2], tonumber(ARGV[3]), ARGV[4] == '1')
return 1
`,
  ),
);
