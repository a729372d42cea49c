import { WAITED_SUFFIX } from './lua-snippets';
import { RedisScript } from './redis-script';

/**
 * KEYS[1] lock; ARGV[1] owner token, ARGV[2] new ttl in ms. Returns 1 when extended, 0 when the lock is
 * no longer ours. Compare and PEXPIRE in one script, so we never extend a lock that someone else now holds.
 * The value is ours with or without the waiter marker (LUA_MARK_WAITED); PEXPIRE keeps it.
 */
export const EXTEND_SCRIPT = new RedisScript(
  'extend',
  `
local value = redis.call('GET', KEYS[1])
if value == ARGV[1] or value == ARGV[1] .. '${WAITED_SUFFIX}' then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`,
);

/** How many exclusive locks one EXTEND_MANY_SCRIPT call renews: a script blocks the server while it runs. */
export const EXTEND_MANY_CHUNK = 100;

/**
 * EXTEND_SCRIPT for many exclusive locks on one server, in one call: KEYS the locks; ARGV the owner token
 * and ttl of each, in pairs. Returns one 1 or 0 per key, as EXTEND_SCRIPT would. A renewal batch sends one
 * call per EXTEND_MANY_CHUNK locks instead of one per lock: the client builds one command, not a hundred,
 * and the server starts one script. Not for Redis Cluster, whose keys of one call must share a slot.
 */
export const EXTEND_MANY_SCRIPT = new RedisScript(
  'extend-many',
  `
local results = {}
for i, key in ipairs(KEYS) do
  local value, token = redis.call('GET', key), ARGV[2 * i - 1]
  if value == token or value == token .. '${WAITED_SUFFIX}' then
    results[i] = redis.call('PEXPIRE', key, ARGV[2 * i])
  else
    results[i] = 0
  end
end
return results
`,
);
