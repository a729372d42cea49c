import { execFile } from 'node:child_process';
import { join } from 'node:path';
import Redis, { Cluster } from 'ioredis';
import { redisLockKeys } from '../../lib/backends/redis/redis-keys';
import { RedisLockBackend, type RedisLockBackendTuning } from '../../lib/backends/redis/redis-lock.backend';
import { worldOf, type BackendFactory, type BackendUnderTest, type BackendWorld } from './backends';
import { freeTestPorts } from './free-port';
import { pingRedis, redisServerArgs } from './redis-server';
import {
  findBinary,
  launchServer,
  removeServerDir,
  retireServer,
  retryOnPortTaken,
  serverDir,
  SpawnedServer,
  waitUntilReady,
} from './server-process';

/**
 * A throw-away Redis Cluster of masters on free loopback ports: `redis-server --cluster-enabled yes` per node,
 * joined with `redis-cli --cluster create`, without persistence, in temp dirs. `stop()` removes everything.
 */
export interface TestRedisCluster {
  readonly nodes: readonly { readonly host: '127.0.0.1'; readonly port: number }[];
  /** `127.0.0.1:p1,127.0.0.1:p2,...`: what a forked worker needs to connect (see connectClusterBackend). */
  readonly address: string;
  /** A new ioredis Cluster client (the caller closes it). */
  client(): Cluster;
  /** A plain connection to one node (for CLUSTER commands and per-node checks). */
  nodeClient(index: number): Redis;
  stop(): Promise<void>;
}

const CREATE_TIMEOUT_MS = 60_000;
const READY_TIMEOUT_MS = 30_000;

interface Node {
  port: number;
  server: SpawnedServer;
  dir: string;
}

/** `replicasPerMaster` replicas follow each master (for failovers); nodes lists masters and replicas alike. */
export async function startRedisCluster(masters = 3, replicasPerMaster = 0): Promise<TestRedisCluster> {
  const binary = findBinary('redis-server');
  const cli = findBinary('redis-cli');
  const nodes: Node[] = [];
  try {
    for (let index = 0; index < masters * (1 + replicasPerMaster); index++) nodes.push(await launchNode(binary));
    await run(cli, [
      '--cluster',
      'create',
      ...nodes.map((node) => `127.0.0.1:${node.port}`),
      '--cluster-replicas',
      String(replicasPerMaster),
      '--cluster-yes',
    ]);
    await Promise.all(nodes.map((node) => waitForClusterOk(node)));
  } catch (error) {
    await stopNodes(nodes);
    throw error;
  }
  const shown = nodes.map((node) => ({ host: '127.0.0.1' as const, port: node.port }));
  return {
    nodes: shown,
    address: shown.map((node) => `${node.host}:${node.port}`).join(','),
    client: () => clusterClient(shown.map((node) => `${node.host}:${node.port}`).join(',')),
    nodeClient: (index) => new Redis({ host: '127.0.0.1', port: nodes[index].port, lazyConnect: false }),
    stop: () => stopNodes(nodes),
  };
}

/** A Cluster client for `host:port,host:port`; connection errors are left to the test (no console noise). */
export function clusterClient(address: string): Cluster {
  const startupNodes = address.split(',').map((node) => {
    const [host, port] = node.split(':');
    return { host, port: Number(port) };
  });
  const client = new Cluster(startupNodes);
  client.on('error', () => undefined);
  return client;
}

/** Which client a cluster suite runs on: an ioredis `Cluster`, or node-redis `createCluster()` (RESP2). */
export type ClusterClientPackage = 'ioredis' | 'node-redis';

export const CLUSTER_CLIENT_PACKAGES: readonly ClusterClientPackage[] = ['ioredis', 'node-redis'];

/** What tests use of a node-redis cluster client, whatever its generics. */
export type NodeRedisCluster = import('redis').RedisClusterType;

/**
 * A node-redis cluster for `host:port,host:port`, connecting (not awaited: commands sent before it has read the
 * slots wait for that), as a forked worker builds it too. `redis` is loaded lazily, like createNodeRedisClient.
 */
export function nodeRedisClusterClient(address: string): NodeRedisCluster {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { createCluster } = require('redis') as typeof import('redis');
  const client = createCluster({
    rootNodes: address.split(',').map((node) => ({ url: `redis://${node}` })),
  }) as unknown as NodeRedisCluster;
  // A test that stops a node on purpose must not throw "Unhandled error event".
  client.on('error', () => undefined);
  connecting.set(
    client,
    client.connect().then(
      () => undefined,
      () => undefined,
    ),
  );
  return client;
}

/**
 * node-redis clusters still reading their slots: close() must wait for that, since node-redis goes on and connects
 * to every master after a close() that came during discovery (connections, and reconnect timers, left behind).
 */
const connecting = new WeakMap<NodeRedisCluster, Promise<void>>();

/** Closes a test's cluster client of either package: gracefully when connected, then drops what is left. */
export async function closeClusterClient(client: Cluster | NodeRedisCluster): Promise<void> {
  if (client instanceof Cluster) {
    if (client.status === 'ready') await client.quit().catch(() => undefined);
    client.disconnect();
    return;
  }
  await connecting.get(client);
  if (client.isOpen) await client.close().catch(() => undefined);
  if (client.isOpen) client.destroy();
}

/** A new cluster client of `clientPackage` (the caller closes it with closeClusterClient). */
export function anyClusterClient(address: string, clientPackage: ClusterClientPackage): Cluster | NodeRedisCluster {
  return clientPackage === 'ioredis' ? clusterClient(address) : nodeRedisClusterClient(address);
}

/** A RedisLockBackend over a new cluster client: used by the cluster suites and by forked workers. */
export function connectClusterBackend(
  address: string,
  tuning: RedisLockBackendTuning = {},
  clientPackage: ClusterClientPackage = 'ioredis',
): BackendUnderTest {
  const client = anyClusterClient(address, clientPackage);
  const backend = new RedisLockBackend({ client, ...tuning });
  let closing: Promise<void> | undefined;
  return {
    backend,
    close: () =>
      (closing ??= (async () => {
        try {
          await backend.close();
        } finally {
          await closeClusterClient(client);
        }
      })()),
  };
}

/**
 * The shared contract suites' view of a cluster (test/contract/redis-cluster.contract.spec.ts and node-redis-cluster.contract.spec.ts), over either client.
 * Forked workers reach it through connectBackend('redis-cluster' or 'redis-node-cluster', address), which
 * test/support/backends.ts maps to connectClusterBackend. No `unreachable`: that case expects the backend's kind ('redis') to equal the factory's
 * name; test/cluster/redis-cluster.spec.ts checks a dead cluster itself.
 */
export function redisClusterFactory(
  cluster: () => TestRedisCluster,
  clientPackage: ClusterClientPackage = 'ioredis',
): BackendFactory {
  const world = (): BackendWorld => worldOf(() => connectClusterBackend(cluster().address, {}, clientPackage));
  return {
    name: clientPackage === 'ioredis' ? 'redis-cluster' : 'redis-node-cluster',
    ...(clientPackage !== 'ioredis' && { backendKind: 'redis' }),
    crossProcess: true,
    fair: false,
    lockDelay: true,
    hasServer: true,
    minTtl: 1_500,
    address: () => cluster().address,
    create: async () => connectClusterBackend(cluster().address, {}, clientPackage),
    world,
    vanishings: [
      {
        name: 'DEL of the lock key with a raw Cluster client',
        run: async (lock) => {
          const client = cluster().client();
          try {
            await client.del(redisLockKeys(lock.namespace, lock.key).lock);
          } finally {
            await client.quit().catch(() => client.disconnect());
          }
        },
      },
    ],
  };
}

function launchNode(binary: string): Promise<Node> {
  return retryOnPortTaken(async () => {
    // The cluster bus would default to port + 10000, which may be taken or above 65535: pick it too.
    const [port, busPort] = await freeTestPorts(2);
    const dir = serverDir('redis-cluster');
    try {
      const server = await launchServer({
        what: `redis-server (cluster node) on 127.0.0.1:${port}`,
        binary,
        args: [
          ...redisServerArgs(port, dir),
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(dir, 'nodes.conf'),
          '--cluster-port',
          String(busPort),
          '--cluster-node-timeout',
          '5000',
        ],
        probe: () => pingRedis(port),
        dir,
      });
      return { port, server, dir };
    } catch (error) {
      removeServerDir(dir);
      throw error;
    }
  });
}

/** Every node must see the whole cluster: all 16384 slots served and state ok. */
async function waitForClusterOk(node: Node): Promise<void> {
  const client = new Redis({ host: '127.0.0.1', port: node.port, lazyConnect: false, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  try {
    await waitUntilReady(
      node.server,
      `cluster state ok on 127.0.0.1:${node.port}`,
      async () => {
        const info = await client.cluster('INFO');
        return /cluster_state:ok/.test(info) && /cluster_slots_ok:16384/.test(info);
      },
      READY_TIMEOUT_MS,
    );
  } finally {
    client.disconnect();
  }
}

async function stopNodes(nodes: Node[]): Promise<void> {
  await Promise.all(
    nodes.splice(0).map(async (node) => {
      await retireServer(node.server);
      removeServerDir(node.dir);
    }),
  );
}

function run(binary: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(binary, args, { timeout: CREATE_TIMEOUT_MS }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${binary} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}
