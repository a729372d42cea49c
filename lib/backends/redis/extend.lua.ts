import { RedisScript } from './redis-script';

/**
 * KEYS[1] lock; ARGV[1] owner token, ARGV[2] new ttl in ms. Returns 1 when extended, 0 when the lock is
 * no longer ours. Compare and PEXPIRE in one script, so we never extend a lock that someone else now holds.
 */
export const EXTEND_SCRIPT = new RedisScript(
  'extend',
  `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`,
);
