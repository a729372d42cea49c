/**
 * Node layout shared with Apache Curator's lock recipes, so a Java service using Curator and a Nest service
 * using this library exclude each other on the same path:
 *
 *   lock path (persistent):     /<enc(namespace)>/<enc(key)>
 *   each contender (ephemeral   /<enc(namespace)>/<enc(key)>/_c_<owner token>-lock-<10-digit sequence>
 *   sequential):
 *
 * which is what `new InterProcessMutex(client, "/<namespace>/<key>")` creates: Curator's "protected" name
 * (`_c_` + a UUID + `-`) followed by its lock name `lock-`, then ZooKeeper's sequence suffix. Our owner token
 * is a UUID, so it serves as the protected id and lets us find our node by name after a lost create reply.
 *
 * Read/write locks (InterProcessReadWriteLock) live under the same kind of path with the markers `__READ__`
 * and `__WRIT__` instead of `lock-`; all markers share the parent's one sequence counter, so sorting by
 * the text after the marker orders every kind of contender together.
 *
 * Modes: 'exclusive' creates `lock-` nodes (InterProcessMutex), 'read' `__READ__` and 'write' `__WRIT__`
 * nodes (InterProcessReadWriteLock). We sort by all three markers and count a `lock-` node as a writer, so
 * among our own services 'exclusive' and 'write' are one lock and both keep readers out. Curator cannot do
 * that: its mutex sorts read/write nodes after its own (their names lack `lock-`), and its read/write lock
 * does the same to mutex nodes. So on a path Java also uses, pick one recipe: 'exclusive' next to Curator's
 * InterProcessMutex, 'read'/'write' next to its InterProcessReadWriteLock; mixing them there is unsafe.
 *
 * Semaphores (`permits: N`) use InterProcessSemaphoreV2's layout under the same lock path:
 *
 *   gate (a mutex):             /<enc(namespace)>/<enc(key)>/locks/_c_<owner token>-lock-<sequence>
 *   each lease (ephemeral       /<enc(namespace)>/<enc(key)>/leases/_c_<owner token>-lease-<sequence>
 *   sequential):
 *
 * A permit is a lease node; at most N may exist once a holder has counted them. The two persistent children
 * `locks` and `leases` contain no marker and sort after every sequence number, so a lock on the same path
 * never mistakes them for contenders, and a semaphore stays apart from the lock of the same name.
 */

/** InterProcessMutex's lock name. */
export const MUTEX_MARKER = 'lock-';
/** InterProcessReadWriteLock's lock names (same length on purpose, as in Curator). */
export const READ_MARKER = '__READ__';
export const WRITE_MARKER = '__WRIT__';

/** InterProcessSemaphoreV2's children of the semaphore path: its gate mutex and its leases, and a lease's name. */
export const SEMAPHORE_GATE = 'locks';
export const SEMAPHORE_LEASES = 'leases';
export const LEASE_MARKER = 'lease-';

/** Every marker we create or recognise; sorting by all of them orders mixed modes by sequence alone. */
export const ALL_MARKERS: readonly string[] = [MUTEX_MARKER, READ_MARKER, WRITE_MARKER];

export type ContenderMode = 'exclusive' | 'read' | 'write';

/** Curator's protected-mode prefix: `_c_` + the 36-character UUID + `-`. */
const PROTECTED_PREFIX = '_c_';
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Characters ZooKeeper rejects in a path (its PathUtils.validatePath: NUL, C0, DEL + C1, UTF-16 surrogates,
 * so every character outside the BMP, the private-use area, U+FFF0-U+FFFF), plus `/` (it would split the
 * key into two path segments) and `%` (our escape character, so decoding is one-to-one).
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what gets percent-encoded
const NEEDS_ENCODING = /[%/\u0000-\u001f\u007f-\u009f\u{e000}-\u{f8ff}\u{fff0}-\u{10ffff}]/gu;

/**
 * One path segment from arbitrary text: percent-encodes (as UTF-8) what ZooKeeper would reject or misread,
 * and the segments `.` and `..`, which it rejects as relative paths. Everything else stays readable, so a
 * Java service names the same lock as `/locks/file:42`.
 */
export function encodePathSegment(text: string): string {
  if (text === '.' || text === '..') return text.replace(/\./g, '%2E');
  return text.replace(NEEDS_ENCODING, (char) => encodeURIComponent(char));
}

/** `/<enc(namespace)>`: the persistent node every lock path of a LockService lives under. */
export function namespacePath(namespace: string): string {
  return `/${encodePathSegment(namespace)}`;
}

/** `/<enc(namespace)>/<enc(key)>`: the lock path; its children are the contenders. */
export function lockPath(namespace: string, key: string): string {
  return `${namespacePath(namespace)}/${encodePathSegment(key)}`;
}

/** `_c_<token>-`: every node this owner token creates under a lock path starts with it. */
export function protectedPrefix(token: string): string {
  if (!UUID_PATTERN.test(token)) {
    throw new TypeError(
      `The ZooKeeper backend needs owner tokens in lowercase UUID form (crypto.randomUUID()), got ${JSON.stringify(token)}.`,
    );
  }
  return `${PROTECTED_PREFIX}${token}-`;
}

/** The name we ask ZooKeeper to create (it appends a 10-digit sequence): the recipe's lock name for `mode`. */
export function contenderPrefix(token: string, mode: ContenderMode = 'exclusive'): string {
  const marker = mode === 'read' ? READ_MARKER : mode === 'write' ? WRITE_MARKER : MUTEX_MARKER;
  return `${protectedPrefix(token)}${marker}`;
}

/**
 * Whether a contender keeps readers out: a write node (Curator's reader checks for the write marker the same
 * way) or one of our exclusive `lock-` nodes. Read nodes and foreign names do not.
 */
export function excludesReaders(name: string): boolean {
  return name.includes(WRITE_MARKER) || name.includes(MUTEX_MARKER);
}

/**
 * Curator's sort key (StandardLockInternalsDriver.fixForSorting): the text after the last occurrence of the
 * marker, i.e. the sequence number, or the whole name when the marker is absent.
 */
export function sortKey(name: string, markers: readonly string[]): string {
  let rest = name;
  for (const marker of markers) {
    const index = rest.lastIndexOf(marker);
    if (index >= 0) rest = rest.slice(index + marker.length);
  }
  return rest;
}

/**
 * Children in Curator's order: by sort key, compared by UTF-16 code units like Java's String.compareTo, with
 * ties kept in the server's order (Java's sort is stable, and so is Array.prototype.sort).
 */
export function sortContenders(children: readonly string[], markers: readonly string[] = [MUTEX_MARKER]): string[] {
  const keyed = children.map((name) => ({ name, key: sortKey(name, markers) }));
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return keyed.map(({ name }) => name);
}

/** The child of a lock path whose name starts with this owner's protected prefix, if any. */
export function findOwnNode(children: readonly string[], token: string): string | undefined {
  const prefix = protectedPrefix(token);
  return children.find((name) => name.startsWith(prefix));
}

/** Whether a child of a lock path is a lock contender, rather than a semaphore's `locks` or `leases` parent. */
export function isContender(name: string): boolean {
  return ALL_MARKERS.some((marker) => name.includes(marker));
}
