import { RedisScript } from './redis-script';

/**
 * KEYS: [1] fencing counter; ARGV: [1] a token (decimal), [2] the lock's ttl ms, [3] counter retention ms.
 * Raises the counter to at least that token, never lowers it; returns the counter afterwards. Redlock uses it
 * so that a majority of instances know the token it handed out (see lib/backends/redlock/redlock-fencing.ts).
 * The raised counter expires like one the acquire script wrote (LUA_NEXT_FENCE): once this server's clock
 * is past the token by the retention, and not before the lock's ttl plus it, nor before its expiry so far.
 */
export const RAISE_FENCE_SCRIPT = new RedisScript(
  'raise-fence',
  `
local current = redis.call('GET', KEYS[1])
if current and tonumber(current) >= tonumber(ARGV[1]) then return current end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local retain = tonumber(ARGV[3])
local lives = math.max(tonumber(ARGV[2]), math.floor(tonumber(ARGV[1]) / 1000) + 1 - now) + retain
lives = math.max(lives, redis.call('PTTL', KEYS[1]))
redis.call('SET', KEYS[1], ARGV[1], 'PX', lives)
return ARGV[1]
`,
);
