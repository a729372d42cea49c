import type { Etcd3 } from 'etcd3';
import type {
  AcquireRequest,
  BackendInspection,
  HeldLock,
  InspectedEntry,
  LockBackend,
  LockGrant,
} from '../lock-backend.interface';
import { BackendLifecycle, settledWithin } from '../shared/backend-lifecycle';
import { loadOptionalPackage } from '../../utils/optional-package';
import type { EtcdClient, EtcdConnectionOptions } from './etcd-client';
import { EtcdAcquisition } from './etcd-acquisition';
import { EtcdHeldLocks } from './etcd-held-locks';
import { lockPrefix, parseContenderValue, READER_MARK, semaphorePrefix } from './etcd-key-layout';
import { EtcdLockClient, toEtcdBackendError } from './etcd-lock-client';
import { CLEANUP_DEADLINE_MS } from './etcd-session';
import { EtcdSessions } from './etcd-sessions';
import { withQuickHostRetry } from './etcd-fault-handling';
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
 * `<namespace>/<enc(key)>/<lease hex>` on a session lease shared with other names (EtcdSessions), the lowest
 * create revision owns the lock, and that revision is the fencing token. See EtcdAcquisition for the queue.
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
  // No `expiry`: a key lives on a session lease this process keeps alive (and revokes on close), like a
  // ZooKeeper node on its session, so a lock nobody renews any more is not left to expire on the server alone.
  readonly supports = { readWrite: true, semaphore: true, expiry: false, lockDelay: true } as const;

  private readonly client: Etcd3;
  private readonly ownsClient: boolean;
  private readonly etcd: EtcdLockClient;
  private readonly sessions: EtcdSessions;
  private readonly held: EtcdHeldLocks;
  private readonly lifecycle: BackendLifecycle;

  constructor(options: EtcdLockBackendOptions) {
    if (options.client) {
      // First: a namespaced client (client.namespace(...)) has no close(), so asEtcd3 would give a vaguer message.
      assertRootNamespace(options.client);
      this.client = asEtcd3(options.client);
      this.ownsClient = false;
      this.address = describeHosts((this.client as unknown as { options?: EtcdConnectionOptions }).options?.hosts);
    } else {
      const hosts = hostList(options.hosts);
      const etcd3 = loadOptionalPackage<typeof import('etcd3')>('etcd3', 'The etcd backend');
      this.client = new etcd3.Etcd3(withQuickHostRetry({ ...options, hosts }, etcd3));
      this.ownsClient = true;
      this.address = describeHosts(hosts);
    }
    this.lifecycle = new BackendLifecycle(this.kind, this.address);
    this.etcd = new EtcdLockClient(this.client, this.address);
    this.sessions = new EtcdSessions(this.etcd, (work) => this.lifecycle.track(work));
    this.held = new EtcdHeldLocks(this.etcd, this.sessions);
  }

  /** @internal LeaderElection on this backend's client, with Go's concurrency.Election layout. */
  createElectionBackend(): ElectionBackend {
    return new EtcdElection(this.etcd, this.sessions, this.held, (work) => this.lifecycle.track(work));
  }

  tryAcquire(request: AcquireRequest): Promise<LockGrant | null> {
    if (this.lifecycle.isClosed) return Promise.reject(this.lifecycle.closedError('tryAcquire'));
    const attempt = this.newAcquisition(request, 'tryAcquire');
    return this.lifecycle.follow(attempt, attempt.tryAcquire());
  }

  acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    if (this.lifecycle.isClosed) return Promise.reject(this.lifecycle.closedError('acquire'));
    const attempt = this.newAcquisition(request, 'acquire', signal);
    return this.lifecycle.follow(attempt, attempt.acquire());
  }

  async extend(lock: HeldLock, ttl: number): Promise<number | null> {
    this.lifecycle.assertOpen('extend');
    const [result] = await this.held.extendMany([{ lock, ttl }]);
    if (result instanceof Error) throw result;
    return result;
  }

  /**
   * Renews many held locks at once: one keepalive per session lease among them, and one txn per 128 keys that
   * checks each key still has our create revision and lease. A lock whose ttl changed moves to another session.
   */
  async extendMany(items: readonly { lock: HeldLock; ttl: number }[]): Promise<(number | null | Error)[]> {
    this.lifecycle.assertOpen('extend');
    return this.held.extendMany(items);
  }

  /** One write: deletes our key by its create revision, never by name alone (etcd#22082). */
  async release(lock: HeldLock): Promise<boolean> {
    this.lifecycle.assertOpen('release');
    try {
      return await this.held.release(lock);
    } catch (error) {
      throw toEtcdBackendError(this.address, 'release', error);
    }
  }

  /**
   * Holders and waiters in queue order: for a lock, the leading readers (or the first writer) hold and the rest
   * wait; for a semaphore, the first `permits` keys hold. Expiry is read from each holder's lease.
   */
  async inspect(namespace: string, key: string): Promise<BackendInspection> {
    this.lifecycle.assertOpen('inspect');
    try {
      const [lock, semaphore] = await Promise.all([
        this.etcd.listContenders(lockPrefix(namespace, key)),
        this.etcd.listContenders(semaphorePrefix(namespace, key)),
      ]);
      const entries = (list: typeof lock, semaphoreRange: boolean) =>
        list.map((contender) => {
          const info = parseContenderValue(contender.value);
          const mode: InspectedEntry['mode'] = contender.key
            .slice(contender.key.lastIndexOf('/') + 1)
            .startsWith(READER_MARK)
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
            },
          };
        });
      const lockEntries = entries(lock, false);
      const firstWriter = lockEntries.findIndex(({ entry }) => entry.mode !== 'read');
      const lockHolders = firstWriter === 0 ? 1 : firstWriter < 0 ? lockEntries.length : firstWriter;
      const semaphoreEntries = entries(semaphore, true);
      const permits = semaphoreEntries[0]?.entry.permits ?? 1;
      const holders = [...lockEntries.slice(0, lockHolders), ...semaphoreEntries.slice(0, permits)];
      const waiters = [...lockEntries.slice(lockHolders), ...semaphoreEntries.slice(permits)];
      const ttls = await Promise.all(
        holders.map(({ leaseId }) => this.etcd.leaseTimeToLive(leaseId).catch(() => undefined)),
      );
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
    this.lifecycle.assertOpen('isLocked');
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
    return this.lifecycle.close(() => this.shutDown());
  }

  private async shutDown(): Promise<void> {
    await this.lifecycle.endAcquires(this.lifecycle.closedError('acquire'), CLOSE_GRACE_MS);
    await this.lifecycle.drain(CLOSE_GRACE_MS);
    // Every lease we still keep (idle sessions, and those of locks the core did not release) goes now.
    await settledWithin(this.sessions.closeAll(), CLOSE_GRACE_MS);
    if (this.ownsClient) this.client.close();
  }

  private newAcquisition(
    request: AcquireRequest,
    operation: 'acquire' | 'tryAcquire',
    signal?: AbortSignal,
  ): EtcdAcquisition {
    return new EtcdAcquisition(
      this.etcd,
      this.sessions,
      request,
      operation,
      (work) => this.lifecycle.track(work),
      signal,
    );
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

/**
 * `hosts` as a list: an array, one address, or addresses separated by commas (as ETCDCTL_ENDPOINTS and our CLI
 * take them; etcd3 would read `'a,b'` as one host). Missing or empty: a TypeError that says what to pass.
 */
function hostList(hosts: unknown): string[] {
  const list = Array.isArray(hosts) ? hosts : typeof hosts === 'string' ? hosts.split(',') : undefined;
  const trimmed = list?.map((host: unknown) => (typeof host === 'string' ? host.trim() : ''));
  if (!trimmed || trimmed.length === 0 || trimmed.some((host) => host === '')) {
    throw new TypeError(
      `EtcdLockBackend needs hosts (or a client), got ${hosts === undefined ? 'none' : JSON.stringify(hosts)}: ` +
        "pass { hosts: 'http://127.0.0.1:2379' }, a list of such URLs, or { client: new Etcd3(...) }.",
    );
  }
  return trimmed;
}

/** `hosts` joined with commas, without any `user:password@`. */
function describeHosts(hosts: string | string[] | undefined): string {
  const list = hosts === undefined ? ['127.0.0.1:2379'] : Array.isArray(hosts) ? hosts : [hosts];
  return list.map((host) => host.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^/@]*@/i, '$1')).join(',');
}

/** The app's client as the `Etcd3` it must be; a TypeError that says what to pass when it is something else. */
function asEtcd3(client: EtcdClient): Etcd3 {
  const candidate = client as unknown as Partial<Record<'kv' | 'leaseClient', Record<string, unknown>>> &
    Record<string, unknown>;
  const fits =
    typeof candidate.kv?.txn === 'function' &&
    typeof candidate.leaseClient?.leaseGrant === 'function' &&
    typeof candidate.watch === 'function' &&
    typeof candidate.close === 'function';
  if (!fits) {
    throw new TypeError(
      "EtcdLockBackend: `client` must be an etcd3 client (new Etcd3({ hosts: 'http://127.0.0.1:2379' })).",
    );
  }
  return client as unknown as Etcd3;
}
