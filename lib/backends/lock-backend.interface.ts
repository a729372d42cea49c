/**
 * The contract every backend passes (test/contract runs one suite against all of them).
 *
 * The core (LockService, LockHandle) validates input, owns timers, deadlines and the watchdog.
 * A backend only talks to its server and keeps these promises:
 *  - acquire/tryAcquire grant a key to at most one owner at a time, with a fencing token that
 *    strictly increases per key across all owners;
 *  - extend/release are checked server-side against the owner token, so they never touch a lock
 *    someone else holds now;
 *  - a waiter is woken by the server (release publishes / watch fires), with a bounded re-check;
 *  - every validity it reports (`validUntil`) is measured from just before the request that won,
 *    on the monotonic clock (`performance.now()`), never from the first attempt.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface LockBackend {
  /** Short backend name used in errors and metrics: 'memory', 'redis', 'etcd'. */
  readonly kind: string;
  /** Where the backend points, for error messages. Never contains credentials. */
  readonly address: string;
  /**
   * Lock kinds beyond exclusive locks that this backend implements safely. The core refuses the others with
   * LockNotSupportedError before any server call, rather than falling back to something weaker.
   */
  readonly supports?: BackendSupport;
  /**
   * True when `tryAcquire` costs no more than the first step of `acquire` and leaves nothing behind when the
   * key is busy (Redis). The core then tries it first, and sets up deadlines and waiting only when the key is
   * busy. Leave it unset where a failed try costs writes (etcd and ZooKeeper join a queue), or where arrival
   * order must be kept exactly (memory grants or queues in acquire's first, synchronous step).
   */
  readonly tryBeforeWait?: boolean;

  /**
   * One attempt, never waits for the key to become free. `operation` is the LockService call it serves, for the
   * errors it raises: 'acquire' when the core tries first on a backend with `tryBeforeWait`; absent: 'tryAcquire'.
   */
  tryAcquire(request: AcquireRequest, operation?: 'acquire' | 'tryAcquire'): Promise<LockGrant | null>;

  /**
   * Waits until the key is granted. When `signal` aborts (the wait deadline passed), the backend
   * leaves any queue it joined and rejects: with `signal.reason` if it was waiting for the key, or with a
   * `LockBackendError` if it was still waiting for the server to answer. It never grants after the abort.
   * Once the returned promise has settled, the backend no longer listens to `signal` nor reads it: the core
   * hands a signal that was never aborted to a later acquire.
   */
  acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant>;

  /**
   * Extends the lock to `ttl` ms from now if, and only if, the owner token still holds it.
   * Resolves the new `validUntil`, or `null` when the lock is no longer ours (expired, deleted, lease gone).
   * Rejects on transport errors; the core retries while validity remains.
   */
  extend(lock: HeldLock, ttl: number): Promise<number | null>;

  /**
   * Optional batch form of `extend`, used when many held locks renew in the same tick: one pipeline or
   * request instead of one per lock. Results are in input order: the new `validUntil`, `null` when that lock
   * is no longer ours, or an Error for that item alone.
   */
  extendMany?(items: readonly { lock: HeldLock; ttl: number }[]): Promise<readonly (number | null | Error)[]>;

  /** Deletes the lock if the owner token still holds it, and wakes the next waiter. Resolves whether it deleted. */
  release(lock: HeldLock): Promise<boolean>;

  /**
   * Optional: the core gave `lock` up without a release (its validity ran out: `maxHold`, a blocked event loop,
   * renewals that kept failing), and nobody may call `release` for it. A backend whose locks do not expire by
   * themselves (ZooKeeper nodes live as long as the session) deletes it here, in the background, so the key is
   * freed; one whose locks expire on the server leaves this out. Must not throw.
   */
  abandon?(lock: HeldLock): void;

  /** Whether anyone holds the key now. */
  isLocked(namespace: string, key: string): Promise<boolean>;

  /**
   * Optional: news the server pushes about a held lock between renewals (ZooKeeper session states).
   * The core subscribes once per handle and calls the returned function on release or loss.
   */
  observe?(lock: HeldLock, listener: (event: BackendLockEvent) => void): () => void;

  /** Optional: who holds the key and who waits, for operators (LockService.inspect, the CLI). */
  inspect?(namespace: string, key: string): Promise<BackendInspection>;

  /**
   * Optional: why the server may not answer right now, in a few words (`connection reconnecting; last connection
   * error: connect ECONNREFUSED 127.0.0.1:6380`), or undefined while connected. The core adds it to the
   * LockBackendError it raises when a call passes its deadline, so that "no reply" also says why.
   */
  describeConnection?(): string | undefined;

  /** Closes what the backend created itself (subscriber connections, timers). Never the client the app passed in. */
  close(): Promise<void>;
}

/** What the core asks a backend to lock. All fields are validated before a backend sees them. */
export interface AcquireRequest {
  /** The LockService `keyPrefix`: `[A-Za-z0-9_.:-]`: no braces, no slash. */
  readonly namespace: string;
  /** The user's key: non-empty, at most 1 KiB of UTF-8, NFC. May contain any character; backends encode it. */
  readonly key: string;
  /** Random owner token: a lowercase v4 UUID, as crypto.randomUUID() makes (see utils/owner-token.ts). */
  readonly token: string;
  /**
   * Absent or 'exclusive' and 'write' must exclude each other and readers; 'read' is shared among readers.
   * The core always sets it; it is optional so that code building requests by hand stays short.
   */
  readonly mode?: 'exclusive' | 'read' | 'write';
  /** Set for a counting semaphore (mode is then 'exclusive'): at most this many holders at once. */
  readonly permits?: number;
  /** `<hostname>/<pid>/<instance>` of the requesting LockService, stored where the backend can, for inspect(). */
  readonly holder?: string;
  /** Requested validity in whole milliseconds, > 0. */
  readonly ttl: number;
  /**
   * Lock-delay in whole ms (only on backends with `supports.lockDelay`; absent or 0: none): after this holder's
   * validity ends without a release, nobody else may get the key for this long. A release ends it at once.
   */
  readonly lockDelay?: number;
}

export interface LockGrant {
  /** Strictly increasing per key across all holders. */
  readonly fencingToken: bigint;
  /** `performance.now()` until which the lock is certainly ours. */
  readonly validUntil: number;
  /** Backend-private data needed later (etcd lease id and key path, ...). */
  readonly state?: unknown;
}

/**
 * 'at-risk': the connection is suspended but the lock may still be ours (validity/session remains);
 * 'lost': the server says the lock is gone (session expired, node deleted);
 * 'recovered': the connection came back and the lock is still ours.
 */
export type BackendLockEvent =
  | { readonly type: 'at-risk'; readonly error: Error }
  | { readonly type: 'lost'; readonly reason: string }
  | { readonly type: 'recovered' };

/** A granted lock as the core hands it back to extend/release. */
export interface HeldLock extends AcquireRequest {
  readonly fencingToken: bigint;
  readonly state?: unknown;
}

export interface BackendSupport {
  readonly readWrite?: boolean;
  readonly semaphore?: boolean;
  /**
   * True when a lock that nobody renews any more disappears from the server `ttl` ms after its last
   * `extend(lock, ttl)` (a key's expiry, a lease). False for ZooKeeper, whose nodes live as long as the session.
   * `@ScheduledLock` relies on it to keep a firing's lock after the job without keeping anything in the process.
   */
  readonly expiry?: boolean;
  /** True when the backend honours `AcquireRequest.lockDelay`; the core refuses a lock-delay elsewhere. */
  readonly lockDelay?: boolean;
}

/** What a backend can tell about one key. Fields it cannot know are left out. */
export interface BackendInspection {
  readonly holders: readonly InspectedEntry[];
  /** In grant order, when the backend keeps a queue; undefined when it cannot tell (e.g. plain Redis waiters). */
  readonly waiters?: readonly InspectedEntry[];
}

export interface InspectedEntry {
  readonly holder?: string;
  readonly mode: 'exclusive' | 'read' | 'write';
  /** Semaphore entries carry their permits. */
  readonly permits?: number;
  readonly fencingToken?: bigint;
  /** Epoch ms: when it was granted (holders) or queued (waiters). */
  readonly since?: number;
  /** Epoch ms when it expires unless renewed. */
  readonly expiresAt?: number;
}

/**
 * The injection token for the backend: an abstract class merged with the interface above, so that a constructor
 * parameter typed `LockBackend` is injected by its type under every compiler. With a symbol token, tsc and ts-jest
 * record such a parameter as `Object` (an interface has no runtime value) while SWC and Vitest record the symbol,
 * so an app's tests passed and its `nest build` failed at startup. Backends implement the interface
 * (`implements LockBackend`); nothing extends this class.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export abstract class LockBackend {}
