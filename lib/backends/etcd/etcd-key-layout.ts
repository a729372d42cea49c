/**
 * Key layout shared with etcd's Go `concurrency.Mutex` and `etcdctl lock <name>`:
 *
 *   lock name (a prefix):  <namespace>/<enc(key)>/
 *   each contender:        <namespace>/<enc(key)>/<lease id, lowercase hex>
 *
 * so a Go service locking "locks/file:42" and LockService({ keyPrefix: 'locks' }).acquire('file:42')
 * queue behind each other.
 */

/**
 * Percent-encodes `%`, `/` and control characters. With no `/` left in the encoded key, no lock's range
 * (`ns/user/`) can contain another lock's keys (`ns/user/1/…` is `ns/user%2F1/…`), the prefix trap of
 * etcd#6278. Every other character, `:` included, stays readable and matches what etcdctl users type.
 */
export function encodeLockKey(key: string): string {
  return key.replace(/[%/\u0000-\u001f\u007f]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/** `<namespace>/<enc(key)>/`: the range every contender for this key lives in. */
export function lockPrefix(namespace: string, key: string): string {
  return `${namespace}/${encodeLockKey(key)}/`;
}

/** Go formats the lease id with `%x`: lowercase hex, no `0x`. Lease ids are positive int64s. */
export function contenderKey(prefix: string, leaseId: string): string {
  return `${prefix}${BigInt(leaseId).toString(16)}`;
}

/** The exclusive end of the range of keys starting with `prefix` (its last byte plus one). */
export function prefixRangeEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  // All 0xff: etcd reads "\0" as "to the end of the keyspace".
  return Buffer.from([0]);
}
