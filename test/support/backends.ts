import { Etcd3 } from 'etcd3';
import Redis, { type Cluster } from 'ioredis';
import type { HeldLock, LockBackend } from '../../lib/backends/lock-backend.interface';
import { lockPrefix } from '../../lib/backends/etcd/etcd-key-layout';
import { EtcdLockBackend } from '../../lib/backends/etcd/etcd-lock.backend';
import { asEtcdLockState } from '../../lib/backends/etcd/etcd-lock-state';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { redisLockKeys } from '../../lib/backends/redis/redis-keys';
import { closeNodeRedisClient as closeOwnedNodeRedisClient } from '../../lib/backends/redis/port/node-redis-port';
import { connectRedlockBackend } from '../redlock/redlock-support';
import { freeTestPort } from './free-port';
import { connectClusterBackend } from './redis-cluster';
import { sharedEtcdEndpoint, sharedRedisUrl } from './shared-servers';

/**
 * The backends the contract suite runs against, and how to connect to each. Shared by the Jest suites and by
 * the forked workers in test/workers, which connect to the same server from another OS process.
 */
export type BackendKind =
  'memory' | 'redis' | 'etcd' | 'redis-cluster' | 'redis-node-cluster' | 'redlock' | 'redlock-node' | NodeRedisKind;

/** The Redis backend over a node-redis client (`redis` package) speaking RESP2 or RESP3. */
export type NodeRedisKind = 'redis-node' | 'redis-node-resp3';

/** One backend instance plus what must be closed after it: the backend, then the client the test created. */
export interface BackendUnderTest {
  readonly backend: LockBackend;
  close: () => Promise<void>;
}

/**
 * A set of backend instances that see the same locks: for redis/etcd each `connect()` is a new client
 * connection (like another app instance), for memory it is a view of the one in-process store.
 */
export interface BackendWorld {
  connect(): BackendUnderTest;
  /** Closes every connection this world made (idempotent). */
  close(): Promise<void>;
}

export interface BackendFactory {
  readonly name: BackendKind;
  /** The `kind` of the LockBackend it builds (and of its errors), when it differs from `name` (node-redis: 'redis'). */
  readonly backendKind?: string;
  /** Locks are shared between OS processes (false for memory: its cross-process cases run in one process). */
  readonly crossProcess: boolean;
  /** Grants queued waiters in arrival order. */
  readonly fair: boolean;
  /** Honours LockOptions.lockDelay (`supports.lockDelay`); the others must refuse it. */
  readonly lockDelay: boolean;
  /** Talks to a server, so "server unreachable" means something. */
  readonly hasServer: boolean;
  /** The shortest ttl the suite uses: etcd leases are whole seconds, so it gets 2 s. */
  readonly minTtl: number;
  /** What a forked worker needs to reach the same locks: the shared server's address ('' for memory). */
  address(): string;
  /** One standalone backend (a new world with one connection). */
  create(): Promise<BackendUnderTest>;
  world(): BackendWorld;
  /** A backend aimed at a loopback port where nothing listens. */
  unreachable?: () => Promise<BackendUnderTest & { port: number }>;
  /**
   * Ways the lock can vanish on the server without the holder's backend doing anything, done with a raw client
   * the way an operator or a lease expiry would (no wake-up message, no backend code involved).
   */
  readonly vanishings: readonly LockVanishing[];
}

export interface LockVanishing {
  readonly name: string;
  run(lock: HeldLock): Promise<void>;
}

/** Connects a backend of `kind` to `address`; also used by workers in other processes. */
export function connectBackend(kind: BackendKind, address: string): BackendUnderTest {
  switch (kind) {
    case 'memory':
      return own(new MemoryLockBackend());
    case 'redis':
      return redisBackend(address);
    case 'redis-node':
      return nodeRedisBackend(address, 2);
    case 'redis-node-resp3':
      return nodeRedisBackend(address, 3);
    case 'etcd':
      return etcdBackend(address);
    case 'redis-cluster':
      // address: '127.0.0.1:p1,127.0.0.1:p2,...' (the cluster's startup nodes)
      return connectClusterBackend(address);
    case 'redis-node-cluster':
      return connectClusterBackend(address, {}, 'node-redis');
    case 'redlock':
      // address: 'redis://127.0.0.1:p1,redis://127.0.0.1:p2,...' (independent masters)
      return connectRedlockBackend(address);
    case 'redlock-node':
      return connectRedlockBackend(address, {}, 'node-redis');
  }
}

/** A backend plus the client it was given, closed together once (backend first). */
export function own(backend: LockBackend, closeClient: () => Promise<void> | void = () => undefined): BackendUnderTest {
  let closing: Promise<void> | undefined;
  return {
    backend,
    close: () =>
      (closing ??= (async () => {
        try {
          await backend.close();
        } finally {
          await closeClient();
        }
      })()),
  };
}

function redisBackend(url: string): BackendUnderTest {
  const client = new Redis(url);
  // A test that stops the server on purpose must not print "Unhandled error event" noise.
  client.on('error', () => undefined);
  return own(new RedisLockBackend({ client }), () => closeRedisClient(client));
}

/**
 * A node-redis client, connecting (not awaited: commands wait in its offline queue until it is up), as a
 * forked worker builds it too. `createClient` is loaded lazily so suites that never use it do not need it.
 */
export function createNodeRedisClient(url: string, resp: 2 | 3): NodeRedisClient {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { createClient } = require('redis') as typeof import('redis');
  const client = createClient({ url, RESP: resp });
  // A test that stops the server on purpose must not throw "Unhandled error event".
  client.on('error', () => undefined);
  client.connect().catch(() => undefined);
  return client as unknown as NodeRedisClient;
}

/** What tests use of a node-redis client, whatever its RESP generics. */
export type NodeRedisClient = import('redis').RedisClientType;

/** Closes it as the backend closes a client it created (which also covers a client still connecting). */
export function closeNodeRedisClient(client: NodeRedisClient): Promise<void> {
  return closeOwnedNodeRedisClient(client);
}

function nodeRedisBackend(url: string, resp: 2 | 3): BackendUnderTest {
  const client = createNodeRedisClient(url, resp);
  return own(new RedisLockBackend({ client }), () => closeNodeRedisClient(client));
}

/**
 * Quits an ioredis client (Redis or Cluster) if it is connected, and stops it reconnecting. A quit() alone is not
 * enough for a client whose server is down: it waits behind the offline queue, fails after maxRetriesPerRequest,
 * and leaves the client reconnecting for ever (a ref'd timer that keeps the Jest worker alive).
 */
export async function closeRedisClient(client: Redis | Cluster): Promise<void> {
  if (client.status === 'ready') await client.quit().catch(() => undefined);
  client.disconnect();
}

function etcdBackend(endpoint: string): BackendUnderTest {
  // A cluster's members, comma-separated, so forked workers can use every member.
  const client = new Etcd3({ hosts: endpoint.split(',') });
  return own(new EtcdLockBackend({ client }), () => client.close());
}

/** A world in which every connect() is `connect()`, each connection closed with the world. */
export function worldOf(connect: () => BackendUnderTest): BackendWorld {
  const opened: BackendUnderTest[] = [];
  return {
    connect() {
      const connection = connect();
      opened.push(connection);
      return connection;
    },
    async close() {
      await Promise.allSettled(opened.splice(0).map((connection) => connection.close()));
    },
  };
}

/** A world whose connections all go to one address (redis/etcd). */
function serverWorld(kind: BackendKind, address: () => string): BackendWorld {
  return worldOf(() => connectBackend(kind, address()));
}

/** One in-process store; each connect() is a view whose close() leaves the store open for the others. */
function memoryWorld(): BackendWorld {
  const store = new MemoryLockBackend();
  return {
    connect: () => ({ backend: sharedView(store), close: async () => undefined }),
    close: () => store.close(),
  };
}

/** Delegates everything except close(), so that closing one LockService does not close the shared store. */
function sharedView(store: LockBackend): LockBackend {
  return {
    kind: store.kind,
    address: store.address,
    tryAcquire: (request) => store.tryAcquire(request),
    acquire: (request, signal) => store.acquire(request, signal),
    extend: (lock, ttl) => store.extend(lock, ttl),
    release: (lock) => store.release(lock),
    isLocked: (namespace, key) => store.isLocked(namespace, key),
    close: async () => undefined,
    ...(store.supports && { supports: store.supports }),
    ...(store.extendMany && { extendMany: (items) => store.extendMany!(items) }),
    ...(store.inspect && { inspect: (namespace, key) => store.inspect!(namespace, key) }),
    ...(store.observe && { observe: (lock, listener) => store.observe!(lock, listener) }),
  };
}

export const memoryFactory: BackendFactory = {
  name: 'memory',
  crossProcess: false,
  fair: true,
  lockDelay: true,
  hasServer: false,
  minTtl: 1_500,
  address: () => '',
  create: async () => connectBackend('memory', ''),
  world: memoryWorld,
  vanishings: [],
};

export const redisFactory: BackendFactory = {
  name: 'redis',
  crossProcess: true,
  // Waiters race when pub/sub wakes them; the redis backend does not promise arrival order.
  fair: false,
  lockDelay: true,
  hasServer: true,
  minTtl: 1_500,
  address: sharedRedisUrl,
  create: async () => connectBackend('redis', sharedRedisUrl()),
  world: () => serverWorld('redis', sharedRedisUrl),
  unreachable: async () => {
    const port = await freeTestPort();
    return { port, ...redisBackend(`redis://127.0.0.1:${port}`) };
  },
  vanishings: [
    {
      name: 'DEL of the lock key with a raw client',
      run: (lock) => withRawRedis((client) => client.del(redisLockKeys(lock.namespace, lock.key).lock)),
    },
  ],
};

/** The same Redis backend and suites over a node-redis client (RESP2 or RESP3) instead of ioredis. */
export function nodeRedisFactory(kind: NodeRedisKind): BackendFactory {
  return {
    ...redisFactory,
    name: kind,
    backendKind: 'redis',
    create: async () => connectBackend(kind, sharedRedisUrl()),
    world: () => serverWorld(kind, sharedRedisUrl),
    unreachable: async () => {
      const port = await freeTestPort();
      return { port, ...nodeRedisBackend(`redis://127.0.0.1:${port}`, kind === 'redis-node' ? 2 : 3) };
    },
  };
}

/** The Redis suites run once per client: ioredis, node-redis RESP2, node-redis RESP3. */
export const REDIS_CLIENT_FACTORIES: readonly BackendFactory[] = [
  redisFactory,
  nodeRedisFactory('redis-node'),
  nodeRedisFactory('redis-node-resp3'),
];

export const etcdFactory: BackendFactory = {
  name: 'etcd',
  crossProcess: true,
  fair: true,
  lockDelay: true,
  hasServer: true,
  minTtl: 2_000,
  address: sharedEtcdEndpoint,
  create: async () => connectBackend('etcd', sharedEtcdEndpoint()),
  world: () => serverWorld('etcd', sharedEtcdEndpoint),
  unreachable: async () => {
    const port = await freeTestPort();
    return { port, ...etcdBackend(`http://127.0.0.1:${port}`) };
  },
  vanishings: [
    {
      name: "deletion of the lock's key range with a raw client",
      run: (lock) => withRawEtcd((client) => client.delete().prefix(lockPrefix(lock.namespace, lock.key)).exec()),
    },
    {
      name: "revocation of the holder's lease with a raw client",
      run: (lock) =>
        withRawEtcd((client) => client.leaseClient.leaseRevoke({ ID: asEtcdLockState(lock.state).leaseId })),
    },
  ],
};

async function withRawRedis(work: (client: Redis) => Promise<unknown>): Promise<void> {
  const client = new Redis(sharedRedisUrl());
  try {
    await work(client);
  } finally {
    await closeRedisClient(client);
  }
}

async function withRawEtcd(work: (client: Etcd3) => Promise<unknown>): Promise<void> {
  const client = new Etcd3({ hosts: sharedEtcdEndpoint() });
  try {
    await work(client);
  } finally {
    client.close();
  }
}

export const BACKEND_FACTORIES: Record<'memory' | 'redis' | 'etcd', BackendFactory> = {
  memory: memoryFactory,
  redis: redisFactory,
  etcd: etcdFactory,
};

let namespaceCounter = 0;

/** A keyPrefix no other test (in this or another process) uses: `t<pid>-<n>-<random>`. */
export function uniqueNamespace(label = 't'): string {
  namespaceCounter += 1;
  const random = Math.random().toString(36).slice(2, 8);
  return `${label.replace(/[^A-Za-z0-9_.:-]/g, '-').slice(0, 40)}-${process.pid}-${namespaceCounter}-${random}`;
}
