import { RedisScript } from './redis-script';

/**
 * KEYS[1] lock; ARGV[1] owner token, ARGV[2] release channel. Returns 1 when deleted, 0 when the lock is
 * no longer ours. Compare and delete in one script: an expired holder can never delete the next holder's
 * lock. The channel is an argument, not a key, because channels are not keys (it still shares the hash tag).
 */
export const RELEASE_SCRIPT = new RedisScript(
  'release',
  `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], '1')
return 1
`,
);
