import {
  lua,
  LUA_HANDOFF,
  LUA_NEXT_FENCE,
  LUA_QUEUE,
  LUA_SERVER_TIME,
  LUA_WAKE_LOCK,
  WAITED_SUFFIX,
} from './lua-snippets';
import { RedisScript } from './redis-script';

/**
 * Exclusive (= write) lock. KEYS: [1] lock, and with FIFO queues [2] queue, [3] queue expiry, [4] fence;
 * ARGV: [1] owner token, [2] the release channel, [3] with FIFO queues: fencing counter retention ms (see
 * LUA_NEXT_FENCE). Returns 1 when deleted, 0 when the lock is no longer ours. Compare and delete in one script:
 * an expired holder can never delete the next holder's lock. Publishes only when a waiter marked the value
 * (LUA_MARK_WAITED): uncontended that is GET and DEL. Then, without FIFO (one key), '*' wakes every waiter;
 * with FIFO the lock goes straight to the queue's head (LUA_HANDOFF).
 * The channel comes in ARGV, never derived from a key: ioredis' `keyPrefix` prefixes KEYS but not channel names,
 * so a channel built from KEYS[1] would miss the waiters. Without FIFO the PUBLISH goes before the DEL: a server
 * that refuses it (an ACL without the channel) fails the script before it deletes anything.
 */
export const RELEASE_SCRIPT = new RedisScript(
  'release',
  lua(
    `
local value = redis.call('GET', KEYS[1])
if value ~= ARGV[1] and value ~= ARGV[1] .. '${WAITED_SUFFIX}' then
  return 0
end
if value == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
if not KEYS[2] then
  redis.call('PUBLISH', ARGV[2], '*')
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('DEL', KEYS[1])
`,
    LUA_SERVER_TIME,
    LUA_NEXT_FENCE,
    LUA_QUEUE,
    LUA_WAKE_LOCK,
    LUA_HANDOFF,
    `
hand_off(KEYS[1], KEYS[4], KEYS[2], KEYS[3], ARGV[2], tonumber(ARGV[3]))
return 1
`,
  ),
);
