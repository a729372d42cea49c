/**
 * Key layout. Everything one lock uses shares the hash tag `{<enc(key)>}`, so it lands in one cluster
 * slot and a script touching the lock and its counter never fails with CROSSSLOT:
 *
 *   <namespace>:{<enc(key)>}            the lock itself: value = owner token, PX = ttl
 *   <namespace>:{<enc(key)>}:fence      fencing counter: last token handed out, no expiry
 *   <namespace>:{<enc(key)>}:released   pub/sub channel: a message wakes this key's waiters
 *
 * The namespace cannot contain braces (the core validates it) and `enc` removes every brace from the
 * user's key, so the tag is always exactly the encoded key: a user key such as `a}:fence` or `{a}` can
 * neither move the hash tag nor land on another key's helper (`a}:fence` -> `ns:{a%7D:fence}`, which is
 * not `ns:{a}:fence`). `%` is encoded too, so the mapping is one-to-one.
 */
export interface RedisLockKeys {
  readonly lock: string;
  readonly fence: string;
  readonly channel: string;
}

export function redisLockKeys(namespace: string, key: string): RedisLockKeys {
  const lock = `${namespace}:{${encodeKeyPart(key)}}`;
  return { lock, fence: `${lock}:fence`, channel: `${lock}:released` };
}

// Braces would change the hash tag; `%` is our escape character; control characters (C0, DEL, C1) would
// make keys unreadable in redis-cli and logs. Everything else, including non-ASCII text, stays as it is.
const NEEDS_ENCODING = /[%{}\u0000-\u001f\u007f-\u009f]/g;

/** Percent-encodes (as UTF-8, like encodeURIComponent) the characters listed above. */
export function encodeKeyPart(key: string): string {
  return key.replace(NEEDS_ENCODING, (char) => encodeURIComponent(char));
}
