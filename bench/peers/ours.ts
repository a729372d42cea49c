import { randomUUID } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import Redis from 'ioredis';
import {
  EtcdLockBackend,
  LockHandle,
  type LockGrant,
  LockService,
  RedisLockBackend,
  RedlockBackend,
  ZooKeeperLockBackend,
} from '../../lib';
import type { AdapterOptions, AdapterSpec, BenchEnv, LockAdapter } from './adapter';

/** Long enough that no contender gives up inside a timed run; the bench bounds runs by time instead. */
const WAIT_TIMEOUT_MS = 120_000;

class OursAdapter implements LockAdapter<LockHandle> {
  constructor(
    readonly name: string,
    private readonly locks: LockService,
    private readonly closeClient: () => Promise<unknown> | void,
  ) {}

  acquire(key: string): Promise<LockHandle> {
    return this.locks.acquire(key);
  }

  release(handle: LockHandle): Promise<void> {
    return handle.release();
  }

  isLost(handle: LockHandle): boolean {
    return handle.state === 'lost';
  }

  async close(): Promise<void> {
    await this.locks.close();
    await this.closeClient();
  }
}

function service(
  backend: RedisLockBackend | RedlockBackend | EtcdLockBackend | ZooKeeperLockBackend,
  options: AdapterOptions,
): LockService {
  return new LockService(backend, { keyPrefix: 'bench', defaults: { ttl: options.ttl, waitTimeout: WAIT_TIMEOUT_MS } });
}

export const oursRedis: AdapterSpec = {
  name: 'ours (LockService, Redis)',
  store: 'redis',
  role: 'ours',
  waiting:
    "library default: woken by the release script's PUBLISH on one shared subscriber connection, with a bounded re-check",
  waits: true,
  renews: true,
  async create(env: BenchEnv, options: AdapterOptions) {
    const client = new Redis(env.redisUrl);
    return new OursAdapter(this.name, service(new RedisLockBackend({ client }), options), () => client.quit());
  },
};

/**
 * The same backend over a node-redis client (`redis`, RESP2) instead of ioredis: the adapter's cost (issue 20).
 * Run beside the ioredis row in the uncontended, hot-key and cross-process scenarios.
 */
export const oursRedisNodeRedis: AdapterSpec = {
  name: 'ours (LockService, Redis, node-redis)',
  store: 'redis',
  role: 'ours',
  waiting: oursRedis.waiting,
  waits: true,
  renews: true,
  async create(env: BenchEnv, options: AdapterOptions) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { createClient } = require('redis') as typeof import('redis');
    const client = createClient({ url: env.redisUrl });
    await client.connect();
    return new OursAdapter(this.name, service(new RedisLockBackend({ client }), options), () => client.close());
  },
};

/**
 * The same backend with `fairness: 'none'`, the opt-out of the default queue: a release wakes the waiters of
 * each process and they race for the lock, so the process that just released may take it straight back.
 */
export const oursRedisUnfair: AdapterSpec = {
  name: "ours (LockService, Redis, fairness 'none')",
  store: 'redis',
  role: 'ours',
  waiting: "fairness 'none' (opt-out): a release publishes to every waiting process; they race, so it is not FIFO",
  waits: true,
  renews: true,
  async create(env: BenchEnv, options: AdapterOptions) {
    const client = new Redis(env.redisUrl);
    return new OursAdapter(this.name, service(new RedisLockBackend({ client, fairness: 'none' }), options), () =>
      client.quit(),
    );
  },
};

/**
 * Our Redlock backend over a single master: the algorithm's own cost (majority rounds, split-vote jitter)
 * without the extra servers, so it runs against the same redis-server as the other Redis rows.
 */
export const oursRedlockOneMaster: AdapterSpec = {
  name: 'ours (LockService, Redlock on 1 master)',
  store: 'redis',
  role: 'ours',
  waiting: 'RedlockBackend defaults: woken by the release PUBLISH, bounded re-check, retry jitter after a split vote',
  waits: true,
  renews: true,
  async create(env: BenchEnv, options: AdapterOptions) {
    const client = new Redis(env.redisUrl);
    return new OursAdapter(this.name, service(new RedlockBackend({ clients: [client] }), options), () => client.quit());
  },
};

export const oursEtcd: AdapterSpec = {
  name: 'ours (LockService, etcd)',
  store: 'etcd',
  role: 'ours',
  waiting: 'revision-ordered queue, watches its predecessor only',
  waits: true,
  renews: true,
  async create(env: BenchEnv, options: AdapterOptions) {
    const client = new Etcd3({ hosts: env.etcdEndpoint });
    return new OursAdapter(this.name, service(new EtcdLockBackend({ client }), options), () => client.close());
  },
};

interface BackendHandle {
  readonly namespace: string;
  readonly key: string;
  readonly token: string;
  readonly ttl: number;
  readonly fencingToken: bigint;
  readonly state?: unknown;
}

/**
 * The held lock the core would pass to release(), as a plain literal: an object spread here costs about 10 µs
 * per cycle on Node 20 (measured), which the backend-only rows would charge to the backend.
 */
function heldLock(key: string, token: string, ttl: number, grant: LockGrant): BackendHandle {
  return { namespace: 'bench', key, token, ttl, fencingToken: grant.fencingToken, state: grant.state };
}

/** A backend row without the core: tryAcquire + release on a free key (the uncontended scenario only). */
function tryAcquireAdapter(
  name: string,
  backend: RedisLockBackend | ZooKeeperLockBackend,
  options: AdapterOptions,
  close: () => Promise<void>,
): LockAdapter<BackendHandle> {
  return {
    name,
    async acquire(key: string): Promise<BackendHandle> {
      const request = { namespace: 'bench', key, token: randomUUID(), ttl: options.ttl };
      const grant = await backend.tryAcquire(request);
      if (!grant) throw new Error(`${key} is busy: the backend-only row is for uncontended runs`);
      return heldLock(key, request.token, request.ttl, grant);
    },
    async release(handle: BackendHandle): Promise<void> {
      await backend.release(handle);
    },
    close,
  };
}

/**
 * Our Redis backend called directly (tryAcquire + release), without LockService, LockHandle and watchdog.
 * Only for the uncontended figure: the gap to the LockService row is the core's per-acquire cost.
 */
export const oursRedisBackendOnly: AdapterSpec = {
  name: 'ours: RedisLockBackend only (no core)',
  store: 'redis',
  role: 'diagnostic',
  waiting: 'does not wait (tryAcquire)',
  waits: false,
  renews: false,
  async create(env: BenchEnv, options: AdapterOptions) {
    const client = new Redis(env.redisUrl);
    const backend = new RedisLockBackend({ client });
    return tryAcquireAdapter(this.name, backend, options, async () => {
      await backend.close();
      await client.quit();
    });
  },
};

/**
 * Our etcd backend called directly (acquire with a signal that never aborts, as LockService calls it, + release),
 * without LockService, LockHandle and watchdog: the gap to the LockService row is the core's cost, the gap to
 * the kept-lease limit the backend's (issue 18).
 */
export const oursEtcdBackendOnly: AdapterSpec = {
  name: 'ours: EtcdLockBackend only (no core)',
  store: 'etcd',
  role: 'diagnostic',
  waiting: 'does not wait (uncontended only)',
  waits: false,
  renews: false,
  async create(env: BenchEnv, options: AdapterOptions) {
    const client = new Etcd3({ hosts: env.etcdEndpoint });
    const backend = new EtcdLockBackend({ client });
    const never = new AbortController().signal;
    return {
      name: this.name,
      async acquire(key: string): Promise<BackendHandle> {
        const request = { namespace: 'bench', key, token: randomUUID(), ttl: options.ttl };
        const grant = await backend.acquire(request, never);
        return heldLock(key, request.token, request.ttl, grant);
      },
      async release(handle: BackendHandle): Promise<void> {
        await backend.release(handle);
      },
      async close(): Promise<void> {
        await backend.close();
        client.close();
      },
    } satisfies LockAdapter<BackendHandle>;
  },
};

/** Session timeout of the ZooKeeper rows: the backend's default would do; spelled out as the raw row's. */
const ZOOKEEPER_SESSION_MS = 10_000;

function zooKeeperBackend(env: BenchEnv): ZooKeeperLockBackend {
  return new ZooKeeperLockBackend({
    connectionString: env.zookeeperConnectionString,
    sessionTimeout: ZOOKEEPER_SESSION_MS,
  });
}

export const oursZooKeeper: AdapterSpec = {
  name: 'ours (LockService, ZooKeeper)',
  store: 'zookeeper',
  role: 'ours',
  waiting: "Curator's InterProcessMutex queue: watches its predecessor only",
  waits: true,
  renews: true,
  async create(env: BenchEnv, options: AdapterOptions) {
    const backend = zooKeeperBackend(env);
    return new OursAdapter(this.name, service(backend, options), () => backend.close());
  },
};

/**
 * Our ZooKeeper backend called directly (tryAcquire + release), without LockService, LockHandle and watchdog:
 * the gap to the LockService row is the core's cost, the gap to the raw limit the backend's (issue 18).
 */
export const oursZooKeeperBackendOnly: AdapterSpec = {
  name: 'ours: ZooKeeperLockBackend only (no core)',
  store: 'zookeeper',
  role: 'diagnostic',
  waiting: 'does not wait (tryAcquire)',
  waits: false,
  renews: false,
  async create(env: BenchEnv, options: AdapterOptions) {
    const backend = zooKeeperBackend(env);
    return tryAcquireAdapter(this.name, backend, options, () => backend.close());
  },
};
