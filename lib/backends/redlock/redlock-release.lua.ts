import { lua, LUA_EXPIRING_MEMBERS, LUA_SERVER_TIME, WAITED_SUFFIX } from '../redis/lua-snippets';
import { RedisScript } from '../redis/redis-script';
import { LUA_REDLOCK_WAITERS } from './redlock-waiters.lua';

/**
 * ARGV[4] of a release that only deletes: a grant that arrived after its round was won on a majority of the
 * other instances. Waking the head there would cost it a round it can only lose while we hold the majority;
 * our own release wakes it on every instance where we hold, and the reservation stays as it is.
 */
export const QUIET_RELEASE = '-';

/**
 * Redlock's exclusive (= write) release on one instance. KEYS: [1] lock, [2] waiters, [3] waiters expiry,
 * [4] reservation; ARGV: [1] owner token, [2] channel, [3] handoff window ms, and to give back a partial grant
 * while still waiting: [4] the caller's waiter entry, [5] its ticket, [6] waiter ttl ms (else [4] is '', or
 * QUIET_RELEASE). Returns 1 when deleted, 0 when the lock was not ours. Compare and delete in one script (an
 * expired holder never deletes the next one's lock); a reservation now lasts `window` ms more; then wakes the
 * head waiter only (LUA_REDLOCK_WAITERS). A partial grant given back puts its waiter back in line at its old
 * place (reserving again if it is the head), and does not wake it: it is retrying already.
 * The value may carry the waiter marker of the single-server scripts (WAITED_SUFFIX): accepted, never written.
 */
export const REDLOCK_RELEASE_SCRIPT = new RedisScript(
  'redlock-release',
  lua(
    `
local value = redis.call('GET', KEYS[1])
if value ~= ARGV[1] and value ~= ARGV[1] .. '${WAITED_SUFFIX}' then return 0 end
redis.call('DEL', KEYS[1])
if ARGV[4] == '${QUIET_RELEASE}' then return 1 end
redis.call('PEXPIRE', KEYS[4], ARGV[3])
if ARGV[4] == '' and redis.call('EXISTS', KEYS[2]) == 0 then return 1 end
`,
    LUA_SERVER_TIME,
    LUA_REDLOCK_WAITERS,
    `
local _, now = server_time()
if ARGV[4] ~= '' then
  join_waiters(KEYS[2], KEYS[3], ARGV[4], ARGV[5], now + tonumber(ARGV[6]))
  reserve_if_head(KEYS[2], KEYS[3], KEYS[4], ARGV[4], now, 0, tonumber(ARGV[3]))
end
wake_head(KEYS[2], KEYS[3], ARGV[2], now, ARGV[4])
return 1
`,
  ),
);

/**
 * Redlock's read release on one instance. KEYS: [1] readers, then as REDLOCK_RELEASE_SCRIPT; same ARGV (and
 * QUIET_RELEASE: only the entry goes).
 * Returns 1 when our live entry was removed, 0 when it was gone or expired. Starts the reservation's window
 * and wakes the head only when the last reader left: before that, no writer can enter.
 */
export const REDLOCK_RELEASE_READ_SCRIPT = new RedisScript(
  'redlock-release-read',
  lua(
    LUA_SERVER_TIME,
    LUA_EXPIRING_MEMBERS,
    LUA_REDLOCK_WAITERS,
    `
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
if ARGV[4] == '${QUIET_RELEASE}' then return 1 end
local _, now = server_time()
if ARGV[4] ~= '' then join_waiters(KEYS[2], KEYS[3], ARGV[4], ARGV[5], now + tonumber(ARGV[6])) end
if tonumber(score) <= now then return 0 end
if live_members(KEYS[1], now) == 0 then
  redis.call('PEXPIRE', KEYS[4], ARGV[3])
  wake_head(KEYS[2], KEYS[3], ARGV[2], now, ARGV[4])
end
return 1
`,
  ),
);

/**
 * A Redlock waiter gives up (granted elsewhere, deadline, abort, close). KEYS: [1] lock, [2] waiters,
 * [3] waiters expiry, [4] reservation; ARGV: [1] its entry, [2] channel. Returns 1 when the entry was there.
 * Drops its reservation. It may have been the head a release just woke, or a writer holding readers back: so
 * while no writer holds the lock, the new head is woken. If this never runs (the process died), the entry
 * expires (waiter ttl) and the reservation lasts at most one handoff window after each release.
 */
export const REDLOCK_LEAVE_SCRIPT = new RedisScript(
  'redlock-leave',
  lua(
    LUA_SERVER_TIME,
    LUA_REDLOCK_WAITERS,
    `
if redis.call('GET', KEYS[4]) == ARGV[1] then redis.call('DEL', KEYS[4]) end
if not leave_waiters(KEYS[2], KEYS[3], ARGV[1]) then return 0 end
if redis.call('EXISTS', KEYS[1]) == 0 then
  local _, now = server_time()
  wake_head(KEYS[2], KEYS[3], ARGV[2], now, '')
end
return 1
`,
  ),
);
