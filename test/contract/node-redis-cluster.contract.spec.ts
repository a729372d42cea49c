import { describeLockContract } from './lock-contract';
import { redisClusterFactory, startRedisCluster, type TestRedisCluster } from '../support/redis-cluster';

/**
 * The shared lock contract against RedisLockBackend over a node-redis `createCluster()` client, on its own 3-master
 * cluster (a file of its own, so Jest can run it beside the ioredis one). What is client-specific on a cluster is
 * how each script is routed (by its first key), loaded per node, and how waiters subscribe: the lock contract
 * covers all of it. The kinds suite (read/write, semaphores) runs the same scripts through the same routing; it
 * runs over node-redis on a single server (test/kinds) and over ioredis on a cluster, and
 * redis-cluster.spec.ts takes every mode through a node-redis cluster.
 */
let cluster: TestRedisCluster | undefined;

beforeAll(async () => {
  cluster = await startRedisCluster(3);
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
});

describeLockContract(
  redisClusterFactory(() => {
    if (!cluster) throw new Error('the cluster is not running');
    return cluster;
  }, 'node-redis'),
);
