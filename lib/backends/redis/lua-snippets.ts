/**
 * Lua helpers shared by the scripts (each script is `helpers + body`, so every script stays one atomic call).
 * Expiry times in our ZSETs are absolute server milliseconds from TIME, so a crashed member simply stops
 * counting once its time has passed, with no client involved; every script drops expired members first.
 */

/** Server clock: returns microseconds (for fencing) and milliseconds (for expiry scores). */
export const LUA_SERVER_TIME = `
local function server_time()
  local t = redis.call('TIME')
  local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])
  return micros, math.floor(micros / 1000)
end
`;

/**
 * The fencing token is max(counter + 1, server TIME in microseconds), written back to the counter.
 * The counter alone makes tokens strictly increasing; the clock keeps them increasing whenever the counter
 * went back or vanished: a restart without persistence, a restart from an older RDB snapshot, a failover to
 * a replica that had not seen the last writes (as long as the new server's clock is past the old tokens).
 * A plain INCR would be one command cheaper, but after such a rollback it would hand out tokens that were
 * already issued, in exactly the failures fencing exists for; so the clock is read on every grant.
 *
 * The counter expires, so nothing stays behind per lock name (a service that locks per order id would
 * otherwise grow Redis without bound): `lives` ms after the grant, or after the counter's own time when it ran
 * ahead of the clock, where `lives` = ttl + retain (the acquire script gets it ready-made from the client, as
 * text, so Redis takes it as it is). Redis 7 writes `SET ... PX` to replicas and the AOF as an absolute time
 * (PXAT), so a replica or a restarted server drops it at the same point of its own clock; Redis 6.2 sends it
 * as PX, so a replica keeps it a little longer, which is safe. Once it is gone, that clock is past the counter
 * by at least `retain` ms, so the clock alone gives a larger token than every one handed out before. The lock
 * itself lives as long as it is renewed; the counter need not: every token after the lock's end comes from a
 * clock that is past the counter anyway (docs: fencing on Redis).
 *
 * `SET ... GET PX` writes the clock, its expiry and returns the old value in one command (Redis >= 6.2); it
 * only has to be corrected when the counter was ahead of the clock (several grants in one microsecond, or a
 * counter raised by Redlock from a faster clock). Older servers answer it with a syntax error: then GET and
 * SET PX. This runs on every grant, so its usual path does as little Lua as it can (issue 18): the token's
 * text is the two TIME fields joined (padded only when the microseconds have fewer than 6 digits), `lives`
 * goes to Redis as the text it came in, and the old value is compared with the token as text when both are
 * digits of the same length (the same order as numbers). Only otherwise are they compared as numbers (whatever
 * the counter holds, e.g. after manual edits). Turning text into numbers and back is most of what this cost
 * before: a number handed to Redis goes through printf. Microseconds since 1970 stay below 2^53 until the year
 * 2255, so Lua's doubles hold them and the rare `+ 1` exactly. The token travels as a string because Redis
 * truncates Lua numbers in replies to integers, and callers put it into messages too.
 */
export const LUA_NEXT_FENCE = `
local function next_fence(fence, ttl, lives)
  local t = redis.call('TIME')
  local s, us = t[1], t[2]
  local token = s .. us
  if #us < 6 then token = s .. string.sub('00000' .. us, -6) end
  local last = redis.pcall('SET', fence, token, 'GET', 'PX', lives)
  if not last then return token end
  if type(last) == 'table' then
    if not last.err then return token end
    last = redis.call('GET', fence)
    redis.call('SET', fence, token, 'PX', lives)
    if not last then return token end
  end
  -- The usual case: the clock has moved past the counter. Digits only, as long as ours, smaller as text.
  if #last == #token and last < token and not string.find(last, '%D') then return token end
  local previous = tonumber(last)
  local micros = s * 1000000 + us
  if previous and previous >= micros then
    local now = (micros - micros % 1000) / 1000
    token = string.format('%.0f', previous + 1)
    local expires = math.max(now + lives, math.floor((previous + 1) / 1000) + 1 + lives - ttl)
    redis.call('SET', fence, token, 'PX', expires - now)
  end
  return token
end
`;

/**
 * Waiter marker. A release PUBLISHes only when someone may be waiting: a waiter that finds the lock held
 * appends WAITED_SUFFIX to the holder's value (APPEND keeps its expiry), in the same script that saw it busy,
 * so the holder's release, whenever it comes, publishes. A grant to a waiter carries the marker from the start:
 * others (readers behind a writer's intent) may wait for it too. A lock that expires publishes nothing, as
 * before: every wait is bounded by the holder's remaining ttl. Owner checks accept the value with or without
 * it (stored tokens never contain a space).
 */
export const WAITED_SUFFIX = ' w';

export const LUA_MARK_WAITED = `
local function mark_waited(lock)
  local value = redis.call('GET', lock)
  if value and string.sub(value, -2) ~= '${WAITED_SUFFIX}' then redis.call('APPEND', lock, '${WAITED_SUFFIX}') end
end
`;

/** ZSET member -> expiry helpers (readers, semaphore holders, writers' intents). */
export const LUA_EXPIRING_MEMBERS = `
local function live_members(zset, now)
  if redis.call('EXISTS', zset) == 0 then return 0 end
  redis.call('ZREMRANGEBYSCORE', zset, '-inf', now)
  return redis.call('ZCARD', zset)
end

local function first_expiry_in(zset, now)
  local first = redis.call('ZRANGE', zset, 0, 0, 'WITHSCORES')
  if #first == 0 then return -1 end
  return math.max(tonumber(first[2]) - now, 1)
end

-- The key itself lives exactly as long as its longest-lived member, so nothing is left behind.
local function put_member(zset, member, expires_at)
  redis.call('ZADD', zset, expires_at, member)
  local last = redis.call('ZRANGE', zset, -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', zset, last[2])
end
`;

/**
 * FIFO queue: a LIST of entries (kind letter + owner token) in arrival order, and a ZSET of each entry's
 * expiry. A waiter refreshes its entry while it waits; one that died or gave up silently is dropped once its
 * entry expires, so it never blocks those behind it for longer than the waiter ttl.
 */
export const LUA_QUEUE = `
local function purge_queue(queue, expiry, now)
  local dead = redis.call('ZRANGEBYSCORE', expiry, '-inf', now)
  for _, entry in ipairs(dead) do redis.call('LREM', queue, 1, entry) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', expiry, '-inf', now) end
  -- A head entry without an expiry (the two keys are written together, so only after manual tampering)
  -- would block the queue forever.
  local head = redis.call('LINDEX', queue, 0)
  while head and not redis.call('ZSCORE', expiry, head) do
    redis.call('LPOP', queue)
    head = redis.call('LINDEX', queue, 0)
  end
end

local function join_queue(queue, expiry, entry, now, waiter_ttl)
  if not redis.call('ZSCORE', expiry, entry) then redis.call('RPUSH', queue, entry) end
  redis.call('ZADD', expiry, now + waiter_ttl, entry)
  local last = redis.call('ZRANGE', expiry, -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', queue, last[2])
  redis.call('PEXPIREAT', expiry, last[2])
end

local function leave_queue(queue, expiry, entry)
  redis.call('LREM', queue, 1, entry)
  redis.call('ZREM', expiry, entry)
end

-- A handoff writer's entry also carries what a grant needs: 'g' .. token .. ' ' .. ... (see LUA_HANDOFF).
local function entry_token(entry)
  if string.sub(entry, 1, 1) == 'g' then return string.match(entry, '^g(%S+)') or '' end
  return string.sub(entry, 2)
end

local function publish_tokens(channel, entries)
  if #entries == 0 then
    redis.call('PUBLISH', channel, '*')
    return
  end
  local tokens = {}
  for i, entry in ipairs(entries) do tokens[i] = entry_token(entry) end
  redis.call('PUBLISH', channel, table.concat(tokens, ' '))
end
`;

/**
 * Wakes the lock's waiters after a change: with a FIFO queue, only the head writer or the readers at the
 * head (up to 100, the rest re-check on their own); without one, everyone ('*'). Callers pass `fifo` false
 * when their backend runs without queues: then nothing is read (no TIME, no queue lookup), only '*' is
 * published. That stays correct next to FIFO waiters of another process: they take '*' as a wake too, and
 * the acquire script still lets only the queue's head in.
 */
export const LUA_WAKE_LOCK = `
local function wake_lock(queue, expiry, channel, fifo)
  local heads = {}
  if fifo and redis.call('EXISTS', queue) == 1 then
    local _, now = server_time()
    purge_queue(queue, expiry, now)
    for i, entry in ipairs(redis.call('LRANGE', queue, 0, 99)) do
      local writer = string.sub(entry, 1, 1) ~= 'r'
      if writer and i > 1 then break end
      heads[#heads + 1] = entry
      if writer then break end
    end
  end
  publish_tokens(channel, heads)
end
`;

/**
 * Grant on release ('fifo' fairness, exclusive/write waiters). A waiting writer's queue entry is
 * 'g' .. token .. ' ' .. px .. ' ' .. check .. ' ' .. grant channel: all a grant needs. When the lock key has
 * just become free (its holder released it, or a waiter left), the live head of the queue, if it is such a
 * writer, is popped and made the holder right here: SET lock (marked as waited for when others still queue)
 * PX px, a fencing token from next_fence, and one PUBLISH 'g <token> <fencingToken> <server ms>' on the
 * waiter's own grant channel (one per process, see RedisLockBackend). So a handoff costs one message, and no
 * other waiter wakes. With check '1', a PUBLISH that reached nobody means the waiter's process is gone (its
 * subscriber connection closed): the next head gets the lock instead, so a dead waiter does not block the key.
 * (Redis Cluster counts only the receivers on its own node: there check is '0'.) Any other head (readers, or a
 * 'w' writer of a process running an older version) is woken as wake_lock does. Needs LUA_SERVER_TIME,
 * LUA_NEXT_FENCE, LUA_QUEUE and LUA_WAKE_LOCK. The waiter computes its validity from the server ms (see
 * handoffValidityEnd). A waiter whose message is lost finds the lock already its own on its next attempt
 * (ACQUIRE_SCRIPT re-grants it).
 */
export const LUA_HANDOFF = `
local function hand_off(lock, fence, queue, expiry, channel, retain)
  if redis.call('EXISTS', queue) == 0 then
    redis.call('PUBLISH', channel, '*')
    return
  end
  local _, now = server_time()
  purge_queue(queue, expiry, now)
  local head = redis.call('LINDEX', queue, 0)
  local granted = false
  while head and string.sub(head, 1, 1) == 'g' do
    redis.call('LPOP', queue)
    redis.call('ZREM', expiry, head)
    -- A malformed entry (manual tampering) is dropped: the next one gets its turn.
    local token, px, check, to = string.match(head, '^g(%S+) (%d+) ([01]) (.+)$')
    if token then
      local value = token
      if redis.call('EXISTS', queue) == 1 then value = token .. '${WAITED_SUFFIX}' end
      redis.call('SET', lock, value, 'PX', px)
      granted = true
      local fencing = next_fence(fence, tonumber(px), tonumber(px) + retain)
      local heard = redis.call('PUBLISH', to, 'g ' .. token .. ' ' .. fencing .. ' ' .. now)
      if heard > 0 or check == '0' then return end
    end
    head = redis.call('LINDEX', queue, 0)
  end
  if granted then redis.call('DEL', lock) end
  wake_lock(queue, expiry, channel, true)
end
`;

/**
 * Wakes as many semaphore waiters from the head of the queue as there are free permits ('*' without a queue,
 * or when `fifo` is false, as in LUA_WAKE_LOCK).
 */
export const LUA_WAKE_SEMAPHORE = `
local function wake_semaphore(holders, queue, expiry, channel, permits, fifo)
  if not fifo or redis.call('EXISTS', queue) == 0 then
    redis.call('PUBLISH', channel, '*')
    return
  end
  local _, now = server_time()
  purge_queue(queue, expiry, now)
  local free = permits - live_members(holders, now)
  if free <= 0 then return end
  publish_tokens(channel, redis.call('LRANGE', queue, 0, free - 1))
end
`;

/**
 * Joins helper sources and script parts into one script. Every call defines all the helpers it contains again
 * (each is a closure), which costs a few microseconds of server time; so the hot paths come first, before
 * the helpers only the slower paths need.
 */
export function lua(...parts: string[]): string {
  return parts.join('\n');
}
