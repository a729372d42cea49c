import type { Client } from 'node-zookeeper-client';
import type { ElectionBackend } from '../../leader-election/election-backend.interface';
import { ZooKeeperElection } from '../../leader-election/zookeeper/zookeeper-election';
import type { AcquireRequest, BackendLockEvent, HeldLock, LockBackend, LockGrant } from '../lock-backend.interface';
import { LockBackendError } from '../../errors';
import { BackendLifecycle } from '../shared/backend-lifecycle';
import { monotonicNow } from '../../utils/clock';
import { localAddressData } from './local-address';
import { DEFAULT_REAP_INTERVAL_MS, LockPathSweeper, MAX_REAP_INTERVAL_MS } from './lock-path-sweeper';
import { OwnNodeWatches } from './own-node-watches';
import { ZooKeeperAcquisition } from './zookeeper-acquisition';
import type { AcquisitionContext } from './zookeeper-queue';
import type { ZooKeeperAcl, ZooKeeperAuthInfo, ZooKeeperClient } from './zookeeper-client';
import { isSessionExpired, toZooKeeperBackendError } from './zookeeper-errors';
import { asZooKeeperLockState, validUntil } from './zookeeper-lock-state';
import { isContender, lockPath } from './zookeeper-node-layout';
import { ZooKeeperSemaphoreAcquisition } from './zookeeper-semaphore-acquisition';
import { hex } from './zookeeper-client-facts';
import { ZooKeeperSession } from './zookeeper-session';
import { checkOptionNames, optionNames } from '../../utils/validate';

export type { ZooKeeperAcl, ZooKeeperAuthInfo, ZooKeeperClient } from './zookeeper-client';

/**
 * Either a node-zookeeper-client `Client` the application owns (we never close it; call `connect()` on it
 * yourself), or where to connect a client this backend creates, closes, and replaces after a session expiry.
 */
export type ZooKeeperLockBackendOptions =
  | {
      readonly client: ZooKeeperClient;
      /** ACL of every node the backend creates (lock paths, contender nodes, elections); default: open to all. */
      readonly acl?: readonly ZooKeeperAcl[];
      /** See the other form's `reapInterval`. */
      readonly reapInterval?: number;
    }
  | {
      readonly client?: undefined;
      /** `host:port[,host:port...][/chroot]`. */
      readonly connectionString: string;
      /**
       * Requested session timeout in ms (default 30 000); the server clamps it to [2, 20] x its tickTime.
       * A crashed holder keeps its locks until its session expires, however short the lock's ttl.
       */
      readonly sessionTimeout?: number;
      /** Longest random pause between reconnection rounds, ms (default 1 000, node-zookeeper-client's). */
      readonly spinDelay?: number;
      /** Credentials added to every client the backend creates, before it connects. */
      readonly authInfo?: readonly ZooKeeperAuthInfo[];
      /** ACL of every node the backend creates (lock paths, contender nodes, elections); default: open to all. */
      readonly acl?: readonly ZooKeeperAcl[];
      /**
       * How often, in ms, the namespaces this backend locks in are listed and their empty lock paths deleted,
       * whoever left them (a process that died leaves its paths behind). Default 300 000 (jittered); 0 turns it off.
       */
      readonly reapInterval?: number;
    };

const DEFAULT_SESSION_TIMEOUT_MS = 30_000;

const ZOOKEEPER_OPTIONS = optionNames<ZooKeeperLockBackendOptions>({
  client: true,
  connectionString: true,
  sessionTimeout: true,
  spinDelay: true,
  authInfo: true,
  acl: true,
  reapInterval: true,
});

/** How long close() waits for abandoned waiters' nodes to be deleted while the server is reachable. */
const CLOSE_GRACE_MS = 3_000;

/**
 * Locks on ZooKeeper with the node layout of Apache Curator's InterProcessMutex (see zookeeper-node-layout),
 * so a Java service locking `/locks/file:42` with Curator and `LockService({ keyPrefix: 'locks' })
 * .acquire('file:42')` exclude each other; 'read' and 'write' locks use InterProcessReadWriteLock's layout
 * instead (one recipe per path when Java shares it, see zookeeper-node-layout), and semaphores
 * InterProcessSemaphoreV2's (zookeeper-semaphore-acquisition). Waiters queue FIFO by
 * sequence number and each watches only the one node it waits for. The fencing token is the node's creation
 * zxid, which ZooKeeper orders globally.
 *
 * Liveness comes from the session, not from a ttl: a lock node lives exactly as long as the session that
 * created it. The client keeps the session alive by itself while connected; a crashed or partitioned holder
 * loses its locks when the server expires its session, one session timeout after it last heard from it.
 * So a lock's validity is the shorter of its ttl and the session timeout (see validUntil), each renewal
 * checks that our node still exists, and `ttl` cannot make ZooKeeper free a crashed holder's lock sooner
 * than the session timeout.
 */
export class ZooKeeperLockBackend implements LockBackend {
  readonly kind = 'zookeeper';
  readonly address: string;
  /** Read/write locks: InterProcessReadWriteLock's layout; semaphores: InterProcessSemaphoreV2's. */
  readonly supports = { readWrite: true, semaphore: true } as const;

  private readonly session: ZooKeeperSession;
  private readonly ownNodes: OwnNodeWatches;
  private readonly sweeper: LockPathSweeper;
  private readonly context: AcquisitionContext;
  private readonly lifecycle: BackendLifecycle;
  private readonly stopSessionEvents: () => void;

  constructor(options: ZooKeeperLockBackendOptions) {
    checkOptionNames(options, ZOOKEEPER_OPTIONS, 'ZooKeeperLockBackend options', "{ connectionString: 'host:2181' }");
    const reapInterval = reapIntervalOf(options?.reapInterval);
    this.session = new ZooKeeperSession(sessionSource(options));
    this.address = this.session.address;
    this.lifecycle = new BackendLifecycle(this.kind, this.address);
    this.ownNodes = new OwnNodeWatches(this.session, (work) => this.lifecycle.track(work));
    this.sweeper = new LockPathSweeper(this.session, (work) => this.lifecycle.track(work), reapInterval);
    this.context = {
      session: this.session,
      ownNodes: this.ownNodes,
      nodeData: localAddressData(),
      track: (work) => this.lifecycle.track(work),
      useNamespace: (namespace) => this.sweeper.use(namespace),
    };
    this.stopSessionEvents = this.session.onEvent((event) => {
      if (event.type !== 'expired') return;
      // The server deleted that session's nodes, and no release of ours will sweep the lock paths they leave.
      for (const node of this.ownNodes.forgetSession(event.sessionId)) this.sweeper.addParentsOf(node);
    });
  }

  /** The session timeout the server granted (before the first connection: the one requested), ms. */
  get sessionTimeout(): number {
    return this.session.sessionTimeout;
  }

  /** @internal LeaderElection with Curator's LeaderLatch layout, on this backend's session. */
  createElectionBackend(): ElectionBackend {
    return new ZooKeeperElection(this, this.context);
  }

  tryAcquire(request: AcquireRequest): Promise<LockGrant | null> {
    if (this.lifecycle.isClosed) return Promise.reject(this.lifecycle.closedError('tryAcquire'));
    try {
      if (request.permits !== undefined) {
        const permit = new ZooKeeperSemaphoreAcquisition(this.context, request, request.permits);
        return this.lifecycle.follow(permit, permit.tryAcquire());
      }
      const attempt = new ZooKeeperAcquisition(this.context, request, 'tryAcquire');
      return this.lifecycle.follow(attempt, attempt.tryAcquire());
    } catch (error) {
      return Promise.reject(error);
    }
  }

  acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    if (this.lifecycle.isClosed) return Promise.reject(this.lifecycle.closedError('acquire'));
    try {
      if (request.permits !== undefined) {
        const permit = new ZooKeeperSemaphoreAcquisition(this.context, request, request.permits);
        return this.lifecycle.follow(permit, permit.acquire(signal));
      }
      const attempt = new ZooKeeperAcquisition(this.context, request, 'acquire', signal);
      return this.lifecycle.follow(attempt, attempt.acquire());
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Confirms that our node still exists and belongs to our session, and measures the validity from just
   * before that request. Nothing on the server needs extending: the client's pings keep the session alive.
   */
  async extend(lock: HeldLock, ttl: number): Promise<number | null> {
    this.lifecycle.assertOpen('extend');
    const state = asZooKeeperLockState(lock.state);
    // Not the live session: it expired, and the server deleted our node with it.
    if (state.sessionId !== this.session.sessionId) return null;
    const startedAt = monotonicNow();
    try {
      const stat = await this.session.exists(state.nodePath);
      if (stat === null || hex(stat.ephemeralOwner) !== state.sessionId) return null;
      return validUntil(startedAt, ttl, this.session.sessionTimeout);
    } catch (error) {
      if (isSessionExpired(error)) return null;
      throw toZooKeeperBackendError(this.address, 'extend', error);
    }
  }

  /**
   * Deletes our node; its path holds our owner token, so it cannot be anyone else's, and ZooKeeper's watch
   * on it wakes the next waiter. The lock path, if that left it empty, goes a little later (LockPathSweeper).
   */
  async release(lock: HeldLock): Promise<boolean> {
    this.lifecycle.assertOpen('release');
    const state = asZooKeeperLockState(lock.state);
    try {
      return await this.ownNodes.removeWhileSession(state.nodePath, state.sessionId);
    } catch (error) {
      if (isSessionExpired(error)) return false;
      throw toZooKeeperBackendError(this.address, 'release', error);
    } finally {
      this.sweeper.addParentsOf(state.nodePath, lock.fencingToken);
    }
  }

  /**
   * Our node lives as long as the session, not a ttl: a lock the core gave up unreleased (maxHold, a blocked
   * event loop) would stay held until the session ends. Delete it; a node already gone costs one request.
   */
  abandon(lock: HeldLock): void {
    if (this.lifecycle.isClosed) return;
    this.lifecycle.track(this.release(lock).catch(() => false));
  }

  async isLocked(namespace: string, key: string): Promise<boolean> {
    this.lifecycle.assertOpen('isLocked');
    try {
      // A semaphore of the same name keeps its `locks` and `leases` parents here; they are not holders.
      const children = await this.session.getChildren(lockPath(namespace, key));
      return children !== null && children.some(isContender);
    } catch (error) {
      throw toZooKeeperBackendError(this.address, 'isLocked', error);
    }
  }

  /**
   * Maps the session's states to the handle, as Curator's ConnectionStateListener does: SUSPENDED ->
   * 'at-risk' (the lock is kept if we reconnect within the session timeout), RECONNECTED -> 'recovered',
   * LOST (session expired) -> 'lost'; and a deletion of our node by anyone -> 'lost'.
   */
  observe(lock: HeldLock, listener: (event: BackendLockEvent) => void): () => void {
    const state = asZooKeeperLockState(lock.state);
    const stops: (() => void)[] = [];
    let ended = false;
    const stop = () => {
      ended = true;
      for (const unsubscribe of stops.splice(0)) unsubscribe();
    };
    const end = (reason: string) => {
      if (ended) return;
      stop();
      listener({ type: 'lost', reason });
    };
    if (state.sessionId !== this.session.sessionId) {
      // Not synchronously: the handle is still being constructed.
      queueMicrotask(() => end('its ZooKeeper session expired before the handle observed it'));
      return stop;
    }
    stops.push(
      this.session.onEvent((event) => {
        if (ended) return;
        if (event.type === 'suspended') {
          listener({ type: 'at-risk', error: this.suspendedError() });
        } else if (event.type === 'reconnected' && event.sessionId === state.sessionId) {
          listener({ type: 'recovered' });
        } else if (event.type === 'expired' && event.sessionId === state.sessionId) {
          end('its ZooKeeper session expired, and the server deleted the lock node with it');
        }
      }),
      this.ownNodes.onDeleted(state.nodePath, () => {
        this.ownNodes.forget(state.nodePath);
        end('its node was deleted on the ZooKeeper server');
      }),
    );
    return stop;
  }

  /** Whether the client is connected, and for how long it has not been (see LockBackend.describeConnection). */
  describeConnection(): string | undefined {
    return this.session.describeConnection();
  }

  /**
   * Rejects pending waiters and deletes their nodes, then closes the client if we created it (closing the
   * session deletes any node of ours still there). Locks already granted are the core's to release first.
   */
  close(): Promise<void> {
    return this.lifecycle.close(() => this.shutDown());
  }

  private async shutDown(): Promise<void> {
    await this.lifecycle.endAcquires(this.lifecycle.closedError('acquire'), CLOSE_GRACE_MS);
    // Clean-up requests only make progress while connected; otherwise the session close fails them.
    this.sweeper.stop();
    this.lifecycle.track(this.sweeper.sweep());
    await this.lifecycle.drain(this.session.isConnected ? CLOSE_GRACE_MS : 0);
    this.stopSessionEvents();
    await this.session.close();
  }

  private suspendedError(): LockBackendError {
    return new LockBackendError(
      'zookeeper',
      this.address,
      'session',
      `the connection to ZooKeeper dropped; the lock is kept if the client reconnects within the session timeout (${this.session.sessionTimeout} ms)`,
    );
  }
}

function reapIntervalOf(reapInterval: unknown): number {
  if (reapInterval === undefined) return DEFAULT_REAP_INTERVAL_MS;
  if (
    typeof reapInterval !== 'number' ||
    !Number.isInteger(reapInterval) ||
    reapInterval < 0 ||
    reapInterval > MAX_REAP_INTERVAL_MS
  ) {
    const shown = typeof reapInterval === 'number' ? String(reapInterval) : JSON.stringify(reapInterval);
    throw new TypeError(
      `Invalid reapInterval ${shown}: use a whole number of milliseconds from 0 (reaping off) to ${MAX_REAP_INTERVAL_MS} (a day).`,
    );
  }
  return reapInterval;
}

function sessionSource(options: ZooKeeperLockBackendOptions) {
  const acl = aclOf(options?.acl);
  if (options?.client) return { client: asZooKeeperClient(options.client), acl };
  if (typeof options?.connectionString !== 'string' || options.connectionString.trim() === '') {
    throw new TypeError(
      'ZooKeeperLockBackend needs { client } (a node-zookeeper-client Client) or { connectionString: "host:port" }.',
    );
  }
  const sessionTimeout = options.sessionTimeout ?? DEFAULT_SESSION_TIMEOUT_MS;
  if (!Number.isInteger(sessionTimeout) || sessionTimeout <= 0) {
    throw new TypeError(
      `Invalid sessionTimeout ${String(options.sessionTimeout)}: use a whole number of milliseconds > 0.`,
    );
  }
  const { spinDelay } = options;
  if (spinDelay !== undefined && (typeof spinDelay !== 'number' || !(spinDelay >= 0) || !Number.isFinite(spinDelay))) {
    throw new TypeError(
      `Invalid spinDelay ${JSON.stringify(spinDelay)}: use a number of milliseconds >= 0 (the pause between connection attempts).`,
    );
  }
  return {
    connectionString: options.connectionString,
    sessionTimeout,
    spinDelay,
    authInfo: authInfoOf(options.authInfo),
    acl,
  };
}

function aclOf(acl: readonly ZooKeeperAcl[] | undefined): readonly ZooKeeperAcl[] | undefined {
  if (acl === undefined) return undefined;
  const entries: unknown = acl;
  const valid =
    Array.isArray(entries) &&
    entries.length > 0 &&
    entries.every(
      (entry: Partial<ZooKeeperAcl> | undefined) =>
        Number.isInteger(entry?.permission) && typeof entry?.id?.scheme === 'string' && typeof entry.id.id === 'string',
    );
  if (!valid) {
    throw new TypeError(
      'ZooKeeperLockBackend: acl must be a non-empty array of { permission, id: { scheme, id } }, e.g. ' +
        "node-zookeeper-client's ACL.CREATOR_ALL_ACL or [new ACL(Permission.ALL, new Id('digest', 'user:<hash>'))].",
    );
  }
  return acl;
}

function authInfoOf(authInfo: readonly ZooKeeperAuthInfo[] | undefined): readonly ZooKeeperAuthInfo[] | undefined {
  if (authInfo === undefined) return undefined;
  const entries: unknown = authInfo;
  const valid =
    Array.isArray(entries) &&
    entries.every(
      (entry: Partial<ZooKeeperAuthInfo> | undefined) =>
        typeof entry?.scheme === 'string' &&
        entry.scheme !== '' &&
        (typeof entry.auth === 'string' || entry.auth instanceof Uint8Array),
    );
  if (!valid) {
    throw new TypeError(
      "ZooKeeperLockBackend: authInfo must be an array of { scheme, auth }, e.g. [{ scheme: 'digest', auth: 'user:password' }].",
    );
  }
  return authInfo;
}

/** The client's methods the backend calls. */
const CALLED = [
  'connect',
  'close',
  'getState',
  'getSessionId',
  'getSessionTimeout',
  'create',
  'remove',
  'exists',
  'getChildren',
  'getData',
  'on',
  'removeListener',
];

/** The app's client as the node-zookeeper-client `Client` it must be; a TypeError saying what to pass otherwise. */
function asZooKeeperClient(client: ZooKeeperClient): Client {
  const missing = CALLED.filter((name) => typeof (client as unknown as Record<string, unknown>)[name] !== 'function');
  if (missing.length > 0) {
    throw new TypeError(
      `ZooKeeperLockBackend: \`client\` must be a node-zookeeper-client Client (zookeeper.createClient('host:2181')); ` +
        `this one has no ${missing.join(', ')}.`,
    );
  }
  return client as unknown as Client;
}
