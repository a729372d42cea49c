import { RedisScript } from './redis-script';

/**
 * KEYS: [1] fencing counter; ARGV: [1] a token (decimal). Raises the counter to at least that token, never
 * lowers it; returns the counter afterwards. Redlock uses it so that a majority of instances know the token
 * it handed out (see lib/backends/redlock/redlock-fencing.ts).
 */
export const RAISE_FENCE_SCRIPT = new RedisScript(
  'raise-fence',
  `
local current = redis.call('GET', KEYS[1])
if current and tonumber(current) >= tonumber(ARGV[1]) then return current end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
`,
);
