/**
 * Redlock's per-key waiter list, on each instance, so that a release wakes one waiter instead of all of them
 * (every waiter retrying a quorum round on every release was a thundering herd: ~146 server calls per grant,
 * and split votes among the retriers on several instances).
 *
 * Two ZSETs beside the lock (same hash tag): `waiters`, entry ('w' | 'r' + owner token) -> ticket, and
 * `waiters:expiry`, entry -> expiry (server ms). The ticket is the waiter's own clock (ms) when it began to
 * wait, the same on every instance, so every instance orders its waiters alike and wakes the same head.
 * Entries expire unless their waiter refreshes them (each of its rounds does), so a waiter that died stops
 * being woken after the waiter ttl; both keys expire with their last entry, so nothing stays behind.
 *
 * Who is granted: a free lock goes to whoever asks first (so the releasing process may take it again at once,
 * which keeps throughput up), with two exceptions. A waiting writer holds back readers that began to wait
 * after it. And a writer at the head that found the lock busy reserves the next turn (`waiters:next`, its
 * entry): the release that follows leaves the reservation `window` ms for the woken head to come, and refuses
 * everyone else meanwhile. So a head loses at most one race to a newcomer; a head that died holds the lock
 * back for `window` ms per release, until its entry expires. Safety stays with the lock key and the quorum.
 */
export const LUA_REDLOCK_WAITERS = `
local function purge_waiters(waiters, expiry, now)
  local dead = redis.call('ZRANGEBYSCORE', expiry, '-inf', now)
  for _, entry in ipairs(dead) do redis.call('ZREM', waiters, entry) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', expiry, '-inf', now) end
end

local function join_waiters(waiters, expiry, entry, ticket, expires_at)
  redis.call('ZADD', waiters, ticket, entry)
  redis.call('ZADD', expiry, expires_at, entry)
  local last = redis.call('ZRANGE', expiry, -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', waiters, last[2])
  redis.call('PEXPIREAT', expiry, last[2])
end

local function leave_waiters(waiters, expiry, entry)
  if redis.call('ZREM', expiry, entry) == 0 then return false end
  redis.call('ZREM', waiters, entry)
  return true
end

-- The waiter entry reserves the next turn if it is a writer at the head: until hold ms (the holder's
-- remaining time) plus window ms, or until a release shortens it to window ms.
local function reserve_if_head(waiters, expiry, nxt, entry, now, hold, window)
  if string.sub(entry, 1, 1) ~= 'w' then return end
  purge_waiters(waiters, expiry, now)
  local head = redis.call('ZRANGE', waiters, 0, 0)[1]
  if head == entry then redis.call('SET', nxt, entry, 'PX', math.max(hold, 0) + window) end
end

-- Publishes the head's token: the first writer alone, or the readers before the first writer (up to 100, the
-- rest re-check on their own). Not to itself: a waiter that just gave a partial grant back is already retrying.
local function wake_head(waiters, expiry, channel, now, except)
  if redis.call('EXISTS', waiters) == 0 then return end
  purge_waiters(waiters, expiry, now)
  local tokens = {}
  for i, entry in ipairs(redis.call('ZRANGE', waiters, 0, 99)) do
    local kind = string.sub(entry, 1, 1)
    if kind == 'w' and i > 1 then break end
    if entry ~= except then tokens[#tokens + 1] = string.sub(entry, 2) end
    if kind == 'w' then break end
  end
  if #tokens > 0 then redis.call('PUBLISH', channel, table.concat(tokens, ' ')) end
end
`;
