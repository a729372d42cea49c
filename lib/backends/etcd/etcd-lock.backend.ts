import type { Etcd3 } from 'etcd3';
import type { AcquireRequest, BackendInspection, HeldLock, InspectedEntry, LockBackend, LockGrant } from '../lock-backend.interface';
import { LockBackendError } from '../../errors';
import { monotonicNow } from '../../utils/clock';
import { loadOptionalPackage } from '../../utils/optional-package';
import type { EtcdClient, EtcdConnectionOptions } from './etcd-client';
import { CLEANUP_DEADLINE_MS, EtcdAcquisition } from './etcd-acquisition';
import { contenderValue, lockPrefix, parseContenderValue, READER_MARK, semaphorePrefix } from './etcd-key-layout';
import { isLeaseNotFound } from './etcd-lease';
import { EtcdLockClient, toEtcdBackendError } from './etcd-lock-client';
import { EtcdSessions } from './etcd-sessions';
import { asEtcdLockState, EtcdLockState, leaseSecondsFor, validUntil } from './etcd-lock-state';
import type { ElectionBackend } from '../../leader-election/election-backend.interface';
import { EtcdElection } from '../../leader-election/etcd/etcd-election';

export type { EtcdClient, EtcdConnectionOptions } from './etcd-client';

/**
 * Either an `Etcd3` client the application owns (we never close it), or etcd3's own options
 * (`hosts`, `auth`, `credentials`, ...) for a client this backend creates and closes.
 */
export type EtcdLockBackendOptions = { client: EtcdClient } | (EtcdConnectionOptions & { client?: undefined });

/** How long close() waits for revokes and watch cancellations before it closes the client anyway. */
const CLOSE_GRACE_MS = CLEANUP_DEADLINE_MS;

/**
 * Locks on etcd v3, compatible with Go's `concurrency.Mutex` and `etcdctl lock`: each contender is a key
 * `<namespace>/<enc(key)>/<lease hex>` on its own lease, the lowest create revision owns the lock, and that
 * revision is the fencing token. See EtcdAcquisition for the queue.
 *
 * Read locks queue in the same range as `r-<lease hex>` and wait only for earlier writers; semaphores queue
 * under `<namespace>/%semaphore/<enc(key)>/` and hold while fewer than `permits` keys are older
 * (etcd-key-layout.ts, etcd-reader-queue.ts, etcd-semaphore-queue.ts). `hosts` may list every member of a
 * cluster; etcd3 fails over between them and our waiters re-read after any watch disconnect.
 */
export class EtcdLockBackend implements LockBackend {
  readonly kind = 'etcd';
  readonly address: string;
  /** Read/write locks and semaphores keep the same queue, lease and re-check rules as exclusive locks. */
  readonly supports = { readWrite: true, semaphore: true, expiry: true } as const;

  private readonly client: Etcd3;
  private readonly ownsClient: boolean;
  private readonly etcd: EtcdLockClient;
  private readonly sessions: EtcdSessions;
  /**
   * Held locks on a session lease. Other locks' renewals keep that lease alive, so a lock its holder stopped
   * renewing (lost: validity passed, event loop blocked) would otherwise keep its key, and block its name, for
   * as long as the session lives. Each renewal tick drops the keys not renewed within their ttl.
   */
  private readonly onSessions = new Set<EtcdLockState>();
  /** Session keys whose delete failed: retried on each renewal tick, and the session kept until then. */
  private readonly undeleted = new Set<EtcdLockState>();
  private readonly acquisitions = new Map<EtcdAcquisition, Promise<unknown>>();
  private readonly background = new Set<Promise<unknown>>();
  private closing?: Promise<void>;

  constructor(options: EtcdLockBackendOptions) {
    if (options.client) {
      // First: a namespaced client (client.namespace(...)) has no close(), so asEtcd3 would give a vaguer message.
      assertRootNamespace(options.client);
      this.client = asEtcd3(options.client);
      this.ownsClient = false;
      this.address = describeHosts((this.client as unknown as { options?: EtcdConnectionOptions }).options?.hosts);
    } else {
      const { Etcd3: Client } = loadOptionalPackage<typeof import('etcd3')>('etcd3', 'The etcd backend');
      this.client = new Client(options as ConstructorParameters<typeof Client>[0]);
      this.ownsClient = true;
      this.address = describeHosts(options.hosts);
    }
    this.etcd = new EtcdLockClient(this.client, this.address);
    this.sessions = new EtcdSessions(this.etcd, (work) => this.runInBackground(work));
  }

  /** @internal LeaderElection on this backend's client, with Go's concurrency.Election layout. */
  createElectionBackend(): ElectionBackend {
    return new EtcdElection(this.etcd, (work) => this.runInBackground(work));
  }

  tryAcquire(request: AcquireRequest): Promise<LockGrant | null> {
    if (this.closing) return Promise.reject(this.closedError('tryAcquire'));
    const attempt = this.newAcquisition(request, 'tryAcquire');
    return this.follow(attempt, attempt.tryAcquire());
  }

  acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    if (this.closing) return Promise.reject(this.closedError('acquire'));
    const attempt = this.newAcquisition(request, 'acquire', signal);
    return this.follow(attempt, attempt.acquire());
  }

  async extend(lock: HeldLock, ttl: number): Promise<number | null> {
    if (this.closing) throw this.closedError('extend');
    const state = asEtcdLockState(lock.state);
    try {
      const seconds = leaseSecondsFor(ttl);
      if (seconds === state.requestedTtlSeconds || seconds === state.leaseTtlSeconds) {
        return await this.renewLease(state, ttl);
      }
      return await this.moveToNewLease(lock, state, ttl, seconds);
    } catch (error) {
      throw toEtcdBackendError(this.address, 'extend', error);
    }
  }

  /**
   * Renews many held locks at once: all keepalives on one stream and one txn (per 128 keys) that checks each
   * key still has our create revision and lease. Locks whose ttl changed take the single path (a new lease).
   */
  async extendMany(items: readonly { lock: HeldLock; ttl: number }[]): Promise<(number | null | Error)[]> {
    if (this.closing) throw this.closedError('extend');
    const results: (number | null | Error)[] = new Array(items.length);
    const batch: { index: number; lock: HeldLock; state: EtcdLockState; ttl: number }[] = [];
    const singles: Promise<void>[] = [];
    items.forEach(({ lock, ttl }, index) => {
      const state = asEtcdLockState(lock.state);
      const seconds = leaseSecondsFor(ttl);
      if (seconds === state.requestedTtlSeconds || seconds === state.leaseTtlSeconds) batch.push({ index, lock, state, ttl });
      else singles.push(this.extend(lock, ttl).then((r) => void (results[index] = r), (e: Error) => void (results[index] = e)));
    });
    this.dropUnrenewedSessionKeys();
    if (batch.length > 0) {
      await this.moveOntoSessions(batch);
      const startedAt = monotonicNow();
      try {
        const longestLease = Math.max(...batch.map(({ state }) => state.leaseTtlSeconds));
        const [leaseTtls, keys] = await Promise.all([
          this.etcd.keepAliveMany(batch.map(({ state }) => state.leaseId), longestLease * 1000),
          this.etcd.readKeys(batch.map(({ state }) => state.keyPath)),
        ]);
        batch.forEach(({ index, state, ttl }, position) => {
          const leaseTtl = leaseTtls.get(state.leaseId) ?? 0;
          const key = keys[position];
          const ours = key !== undefined && key.createRevision === state.createRevision && key.leaseId === state.leaseId;
          if (leaseTtl <= 0 && state.onSession) this.sessions.expired(state.leaseId);
          if (leaseTtl <= 0 || !ours) {
            results[index] = null;
            return;
          }
          state.leaseTtlSeconds = leaseTtl;
          state.renewedAt = startedAt;
          state.renewedFor = ttl;
          results[index] = validUntil(startedAt, ttl, leaseTtl);
        });
      } catch (error) {
        const failure = toEtcdBackendError(this.address, 'extend', error) as Error;
        for (const { index } of batch) results[index] = failure;
      }
    }
    await Promise.all(singles);
    return results;
  }

  async release(lock: HeldLock): Promise<boolean> {
    if (this.closing) throw this.closedError('release');
    const state = asEtcdLockState(lock.state);
    try {
      // One write: revoking our lease deletes exactly the keys on it, which is our contender key and nothing
      // else, so it can never delete a newer holder's key (etcd#22082). A delete txn first would cost a second
      // write (and fsync) for the same result.
      if (!state.onSession) return await this.etcd.revoke(state.leaseId);
      // Other locks live on the session lease: delete only our key, by its create revision, and give the lease
      // back. Never revoke it here. A key dropped already (not renewed within its ttl) is not ours to delete.
      if (!this.onSessions.delete(state)) return false;
      return await this.deleteSessionKey(state);
    } catch (error) {
      throw toEtcdBackendError(this.address, 'release', error);
    }
  }

  /**
   * Holders and waiters in queue order: for a lock, the leading readers (or the first writer) hold and the rest
   * wait; for a semaphore, the first `permits` keys hold. Expiry is read from each holder's lease.
   */
  async inspect(namespace: string, key: string): Promise<BackendInspection> {
    if (this.closing) throw this.closedError('inspect');
    try {
      const [lock, semaphore] = await Promise.all([
        this.etcd.listContenders(lockPrefix(namespace, key)),
        this.etcd.listContenders(semaphorePrefix(namespace, key)),
      ]);
      const entries = (list: typeof lock, semaphoreRange: boolean) =>
        list.map((contender) => {
          const info = parseContenderValue(contender.value);
          const mode: InspectedEntry['mode'] = contender.key.slice(contender.key.lastIndexOf('/') + 1).startsWith(READER_MARK)
            ? 'read'
            : 'exclusive';
          return {
            leaseId: contender.leaseId,
            entry: {
              mode,
              fencingToken: BigInt(contender.createRevision),
              ...(info.holder !== undefined && { holder: info.holder }),
              ...(semaphoreRange && info.permits !== undefined && { permits: info.permits }),
              ...(info.since !== undefined && { since: info.since }),
            } as InspectedEntry,
          };
        });
      const lockEntries = entries(lock, false);
      const firstWriter = lockEntries.findIndex(({ entry }) => entry.mode !== 'read');
      const lockHolders = firstWriter === 0 ? 1 : firstWriter < 0 ? lockEntries.length : firstWriter;
      const semaphoreEntries = entries(semaphore, true);
      const permits = semaphoreEntries[0]?.entry.permits ?? 1;
      const holders = [...lockEntries.slice(0, lockHolders), ...semaphoreEntries.slice(0, permits)];
      const waiters = [...lockEntries.slice(lockHolders), ...semaphoreEntries.slice(permits)];
      const ttls = await Promise.all(holders.map(({ leaseId }) => this.etcd.leaseTimeToLive(leaseId).catch(() => undefined)));
      return {
        holders: holders.map(({ entry }, index) => {
          const ttl = ttls[index];
          return ttl !== undefined && ttl > 0 ? { ...entry, expiresAt: Date.now() + ttl * 1000 } : entry;
        }),
        waiters: waiters.map(({ entry }) => entry),
      };
    } catch (error) {
      throw toEtcdBackendError(this.address, 'inspect', error);
    }
  }

  async isLocked(namespace: string, key: string): Promise<boolean> {
    if (this.closing) throw this.closedError('isLocked');
    try {
      return await this.etcd.anyContender(lockPrefix(namespace, key));
    } catch (error) {
      throw toEtcdBackendError(this.address, 'isLocked', error);
    }
  }

  /**
   * Rejects pending waiters, revokes their leases, cancels their watches, then closes the client if we
   * created it. Locks already granted are the core's to release before this. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    for (const attempt of this.acquisitions.keys()) attempt.cancel(this.closedError('acquire'));
    await settledWithin(Promise.allSettled([...this.acquisitions.values()]), CLOSE_GRACE_MS);
    await settledWithin(Promise.allSettled([...this.background]), CLOSE_GRACE_MS);
    if (this.ownsClient) this.client.close();
  }

  /** Same ttl in seconds: one keepalive, and in parallel a check that our key still lives on that lease. */
  private async renewLease(state: EtcdLockState, ttl: number): Promise<number | null> {
    const startedAt = monotonicNow();
    const [leaseTtl, ours] = await Promise.all([
      this.etcd.keepAlive(state.leaseId, state.leaseTtlSeconds * 1000),
      this.etcd.stillOurs(state.keyPath, state.createRevision, state.leaseId),
    ]);
    if (leaseTtl <= 0 || !ours) return null;
    state.leaseTtlSeconds = leaseTtl;
    state.renewedAt = startedAt;
    state.renewedFor = ttl;
    return validUntil(startedAt, ttl, leaseTtl);
  }

  /** Another ttl: a lease's TTL is fixed, so grant a new one and move our key onto it (same create revision). */
  private async moveToNewLease(lock: HeldLock, state: EtcdLockState, ttl: number, seconds: number): Promise<number | null> {
    const startedAt = monotonicNow();
    const lease = await this.etcd.grant(seconds);
    // If the txn fails on the wire we cannot know whether our key moved; the new lease then just expires.
    const moved = await this.etcd.rebind(state.keyPath, state.createRevision, contenderValue(lock), lease.id);
    if (!moved) {
      this.runInBackground(this.etcd.revoke(lease.id, { deadline: Date.now() + CLEANUP_DEADLINE_MS }));
      return null;
    }
    const oldLeaseId = state.leaseId;
    const wasOnSession = state.onSession === true;
    this.onSessions.delete(state);
    state.leaseId = lease.id;
    state.leaseTtlSeconds = lease.ttlSeconds;
    state.requestedTtlSeconds = seconds;
    state.onSession = false;
    // A session lease still carries other locks: give it back. Our own old lease carries no key any more; if
    // this revoke fails it simply expires.
    if (wasOnSession) this.sessions.leave(oldLeaseId);
    else this.runInBackground(this.etcd.revoke(oldLeaseId, { deadline: Date.now() + CLEANUP_DEADLINE_MS }));
    return validUntil(startedAt, ttl, lease.ttlSeconds);
  }

  /**
   * Moves held locks still on a lease of their own onto the session lease of their ttl (EtcdSessions): one txn
   * per 128 keys, each key only if it still has its create revision, then their own leases are revoked. A lock
   * that cannot move now stays on its lease and is renewed as before; the next renewal tries again.
   */
  private async moveOntoSessions(batch: readonly { lock: HeldLock; state: EtcdLockState; ttl: number }[]): Promise<void> {
    const groups = new Map<number, { lock: HeldLock; state: EtcdLockState; ttl: number }[]>();
    for (const item of batch) {
      if (item.state.onSession) continue;
      const seconds = leaseSecondsFor(item.ttl);
      let group = groups.get(seconds);
      if (!group) groups.set(seconds, (group = []));
      group.push(item);
    }
    await Promise.all(
      [...groups].map(async ([seconds, group]) => {
        let session: { id: string; ttlSeconds: number };
        try {
          session = await this.sessions.join(seconds, group.length);
        } catch {
          return;
        }
        const items = group.map(({ lock, state }) => ({ key: state.keyPath, createRevision: state.createRevision, value: contenderValue(lock) }));
        let moved: boolean[];
        try {
          moved = await this.etcd.rebindMany(items, session.id);
        } catch (error) {
          if (isLeaseNotFound(error)) this.sessions.expired(session.id);
          for (let i = 0; i < group.length; i++) this.sessions.leave(session.id);
          return;
        }
        await Promise.all(
          group.map(async ({ lock, state, ttl }, index) => {
            // A chunk fails whole when one of its keys is no longer ours: move its keys one by one.
            const ok =
              moved[index] || (await this.etcd.rebind(state.keyPath, state.createRevision, contenderValue(lock), session.id).catch(() => false));
            if (!ok) {
              this.sessions.leave(session.id);
              return;
            }
            const ownLease = state.leaseId;
            state.leaseId = session.id;
            state.leaseTtlSeconds = session.ttlSeconds;
            state.onSession = true;
            // Renewed by the keepalive that follows; until then it counts from now.
            state.renewedAt = monotonicNow();
            state.renewedFor = ttl;
            this.onSessions.add(state);
            this.runInBackground(this.etcd.revoke(ownLease, { deadline: Date.now() + CLEANUP_DEADLINE_MS }));
          }),
        );
      }),
    );
  }

  /** Deletes a session key by its create revision and gives the lease back; on failure keeps it for a retry. */
  private async deleteSessionKey(state: EtcdLockState): Promise<boolean> {
    try {
      const deleted = await this.etcd.deleteIfOurs(state.keyPath, state.createRevision);
      this.undeleted.delete(state);
      this.sessions.leave(state.leaseId);
      return deleted;
    } catch (error) {
      this.undeleted.add(state);
      throw error;
    }
  }

  /** See onSessions: drops keys their holders stopped renewing, and retries deletes that failed. */
  private dropUnrenewedSessionKeys(): void {
    const now = monotonicNow();
    for (const state of this.onSessions) {
      if (now - (state.renewedAt ?? now) <= (state.renewedFor ?? Infinity)) continue;
      this.onSessions.delete(state);
      this.runInBackground(this.deleteSessionKey(state));
    }
    for (const state of this.undeleted) {
      this.undeleted.delete(state);
      this.runInBackground(this.deleteSessionKey(state));
    }
  }

  private newAcquisition(request: AcquireRequest, operation: 'acquire' | 'tryAcquire', signal?: AbortSignal): EtcdAcquisition {
    return new EtcdAcquisition(this.etcd, request, operation, (work) => this.runInBackground(work), signal);
  }

  /** Tracks an acquisition until it settles, so close() can cancel it and wait for its clean-up. */
  private follow<T>(attempt: EtcdAcquisition, result: Promise<T>): Promise<T> {
    const settled = result.then(
      () => this.acquisitions.delete(attempt),
      () => this.acquisitions.delete(attempt),
    );
    this.acquisitions.set(attempt, settled);
    return result;
  }

  private runInBackground(work: Promise<unknown>): void {
    const tracked = work.catch(() => undefined).finally(() => this.background.delete(tracked));
    this.background.add(tracked);
  }

  private closedError(operation: string): LockBackendError {
    return new LockBackendError('etcd', this.address, operation, 'the backend is closed (close() was called)');
  }
}

/**
 * The raw KV/lease/watch calls we make bypass etcd3's namespace prefixing, so a namespaced client would
 * mix prefixed and unprefixed keys. Namespacing is LockService's `keyPrefix`.
 */
function assertRootNamespace(client: object): void {
  const prefix = (client as unknown as { prefix?: Buffer }).prefix;
  if (prefix && prefix.length > 0) {
    throw new TypeError(
      'EtcdLockBackend needs the root Etcd3 client, not client.namespace(...). Use LockService keyPrefix to namespace locks.',
    );
  }
}

/** `hosts` joined with commas, without any `user:password@`. */
function describeHosts(hosts: string | string[] | undefined): string {
  const list = hosts === undefined ? ['127.0.0.1:2379'] : Array.isArray(hosts) ? hosts : [hosts];
  return list.map((host) => host.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^/@]*@/i, '$1')).join(',');
}

function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    void work.finally(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** The app's client as the `Etcd3` it must be; a TypeError that says what to pass when it is something else. */
function asEtcd3(client: EtcdClient): Etcd3 {
  const candidate = client as unknown as Partial<Record<'kv' | 'leaseClient', Record<string, unknown>>> & Record<string, unknown>;
  const fits =
    typeof candidate.kv?.txn === 'function' &&
    typeof candidate.leaseClient?.leaseGrant === 'function' &&
    typeof candidate.watch === 'function' &&
    typeof candidate.close === 'function';
  if (!fits) {
    throw new TypeError("EtcdLockBackend: `client` must be an etcd3 client (new Etcd3({ hosts: 'http://127.0.0.1:2379' })).");
  }
  return client as unknown as Etcd3;
}
