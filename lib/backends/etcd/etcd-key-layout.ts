/**
 * Key layout shared with etcd's Go `concurrency.Mutex` and `etcdctl lock <name>`:
 *
 *   lock name (a prefix):  <namespace>/<enc(key)>/
 *   exclusive/write:       <namespace>/<enc(key)>/<lease id, lowercase hex>
 *   read:                  <namespace>/<enc(key)>/r-<lease id, lowercase hex>
 *   semaphore:             <namespace>/%semaphore/<enc(key)>/<lease id, lowercase hex>
 *
 * so a Go service locking "locks/file:42" and LockService({ keyPrefix: 'locks' }).acquire('file:42')
 * queue behind each other. Readers stay in the same range: a Go Mutex (or etcdctl) waits behind them as it
 * should, and our readers take every key that is not a reader's (Go's included) for a writer.
 */

/**
 * Marks a reader's key. Lease ids print as hex digits only, so no writer key (ours or Go's) starts with it.
 * The `-` also sorts it into a range of its own: `r-` .. `r.`.
 */
export const READER_MARK = 'r-';

/**
 * The path segment that keeps semaphores apart from locks of the same name. It cannot be an encoded key:
 * encodeLockKey only emits `%` followed by two hex digits, and namespaces may not contain `%` or `/`.
 */
export const SEMAPHORE_SEGMENT = '%semaphore';

/**
 * Percent-encodes `%`, `/` and control characters. With no `/` left in the encoded key, no lock's range
 * (`ns/user/`) can contain another lock's keys (`ns/user/1/…` is `ns/user%2F1/…`), the prefix trap of
 * etcd#6278. Every other character, `:` included, stays readable and matches what etcdctl users type.
 */
export function encodeLockKey(key: string): string {
  return key.replace(
    // eslint-disable-next-line no-control-regex -- control characters are exactly what gets percent-encoded
    /[%/\u0000-\u001f\u007f]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`,
  );
}

/** `<namespace>/<enc(key)>/`: the range every contender for this key lives in. */
export function lockPrefix(namespace: string, key: string): string {
  return `${namespace}/${encodeLockKey(key)}/`;
}

/** `<namespace>/%semaphore/<enc(key)>/`: the range every holder and waiter of this semaphore lives in. */
export function semaphorePrefix(namespace: string, key: string): string {
  return `${namespace}/${SEMAPHORE_SEGMENT}/${encodeLockKey(key)}/`;
}

/** Go formats the lease id with `%x`: lowercase hex, no `0x`. Lease ids are positive int64s. */
export function contenderKey(prefix: string, leaseId: string): string {
  return `${prefix}${BigInt(leaseId).toString(16)}`;
}

/** A reader's key in a lock's range: `<prefix>r-<lease id hex>`. */
export function readerKey(prefix: string, leaseId: string): string {
  return `${prefix}${READER_MARK}${BigInt(leaseId).toString(16)}`;
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

/** What a contender key's value carries besides the owner token, for inspect(). */
export interface ContenderInfo {
  readonly holder?: string;
  readonly permits?: number;
  /** Epoch ms when the contender joined the queue. */
  readonly since?: number;
}

/**
 * The value of our contender keys: `<owner token> <JSON info>`. Nothing compares it (ownership is checked by
 * create revision and lease), so it is free to carry who holds or waits, for operators.
 */
export function contenderValue(request: { token: string; holder?: string; permits?: number }): string {
  // The JSON of a ContenderInfo, written out: one string per acquire, without the objects JSON.stringify needs.
  const holder = request.holder === undefined ? '' : `"holder":${JSON.stringify(request.holder)},`;
  const permits = request.permits === undefined ? '' : `"permits":${JSON.stringify(request.permits)},`;
  return `${request.token} {${holder}${permits}"since":${Date.now()}}`;
}

/** The info of a contender value; empty for keys written by etcdctl or Go services (their value is not ours). */
export function parseContenderValue(value: string): ContenderInfo {
  const space = value.indexOf(' ');
  if (space < 0) return {};
  try {
    const info = JSON.parse(value.slice(space + 1)) as ContenderInfo;
    return typeof info === 'object' && info !== null ? info : {};
  } catch {
    return {};
  }
}
