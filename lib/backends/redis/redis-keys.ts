/**
 * Key layout. Everything one lock name uses shares the hash tag `{<enc(key)>}`, so it lands in one cluster
 * slot and a script touching several of these keys never fails with CROSSSLOT:
 *
 *   <ns>:{<enc>}                            exclusive/write lock: value = owner token, PX = ttl
 *   <ns>:{<enc>}:readers                    read holders: ZSET owner token -> expiry (server ms)
 *   <ns>:{<enc>}:writers-waiting            waiting writers' intents (block new readers): ZSET token -> expiry
 *   <ns>:{<enc>}:queue                      FIFO mode: LIST of waiters, oldest first: 'r' + token (readers),
 *                                           'g' + token + ' ' + what a grant needs (writers, see LUA_HANDOFF)
 *   <ns>:{<enc>}:queue:expiry               FIFO mode: ZSET queue entry -> expiry, refreshed while it waits
 *   <ns>:{<enc>}:released                   pub/sub channel: '*' wakes every waiter, else the tokens to wake
 *   <ns>:{<enc>}:semaphore                  semaphore holders: ZSET owner token -> expiry (apart from the lock)
 *   <ns>:{<enc>}:semaphore:queue            FIFO mode: LIST of semaphore waiters ('s' + token)
 *   <ns>:{<enc>}:semaphore:queue:expiry     FIFO mode: ZSET queue entry -> expiry
 *   <ns>:{<enc>}:semaphore:released         pub/sub channel of the semaphore
 *   <ns>:{<enc>}:fence                      fencing counter of the name (lock, readers and semaphore alike)
 *   <ns>:handoff:<backend id>               pub/sub channel: grants to this backend's waiting writers (no key)
 *
 * Every one of them expires: the lock with its ttl, ZSETs and queues with their last member, the counter
 * after the ttl plus a retention (LUA_NEXT_FENCE). A name that is no longer locked leaves nothing behind.
 *
 * The namespace cannot contain braces (the core validates it) and `enc` removes every brace from the
 * user's key, so the tag is always exactly the encoded key: a user key such as `a}:fence` or `{a}` can
 * neither move the hash tag nor land on another key's helper (`a}:fence` -> `ns:{a%7D:fence}`, which is
 * not `ns:{a}:fence`). `%` is encoded too, so the mapping is one-to-one.
 */
export interface RedisLockKeys {
  /** The hash tag's content: the encoded user key (what Redis Cluster hashes). */
  readonly tag: string;
  readonly lock: string;
  readonly readers: string;
  readonly writersWaiting: string;
  readonly queue: string;
  readonly queueExpiry: string;
  readonly channel: string;
  readonly fence: string;
}

export interface RedisSemaphoreKeys {
  readonly tag: string;
  readonly holders: string;
  readonly queue: string;
  readonly queueExpiry: string;
  readonly channel: string;
  readonly fence: string;
}

/** Only the exclusive/write lock's key and its tag: what a renewal needs, without building the other keys. */
export function redisLockKey(namespace: string, key: string): { readonly tag: string; readonly lock: string } {
  const tag = encodeKeyPart(key);
  return { tag, lock: `${namespace}:{${tag}}` };
}

export function redisLockKeys(namespace: string, key: string): RedisLockKeys {
  const tag = encodeKeyPart(key);
  const lock = `${namespace}:{${tag}}`;
  return {
    tag,
    lock,
    readers: `${lock}:readers`,
    writersWaiting: `${lock}:writers-waiting`,
    queue: `${lock}:queue`,
    queueExpiry: `${lock}:queue:expiry`,
    channel: `${lock}:released`,
    fence: `${lock}:fence`,
  };
}

export function redisSemaphoreKeys(namespace: string, key: string): RedisSemaphoreKeys {
  const tag = encodeKeyPart(key);
  const base = `${namespace}:{${tag}}`;
  const holders = `${base}:semaphore`;
  return {
    tag,
    holders,
    queue: `${holders}:queue`,
    queueExpiry: `${holders}:queue:expiry`,
    channel: `${holders}:released`,
    fence: `${base}:fence`,
  };
}

// Braces would change the hash tag; `%` is our escape character; control characters (C0, DEL, C1) would
// make keys unreadable in redis-cli and logs. Everything else, including non-ASCII text, stays as it is.
// eslint-disable-next-line no-control-regex -- control characters are exactly what gets percent-encoded
const NEEDS_ENCODING = /[%{}\u0000-\u001f\u007f-\u009f]/g;

/** Percent-encodes (as UTF-8, like encodeURIComponent) the characters listed above. */
export function encodeKeyPart(key: string): string {
  return key.replace(NEEDS_ENCODING, (char) => encodeURIComponent(char));
}
