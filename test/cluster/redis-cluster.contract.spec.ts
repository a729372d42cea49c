import { describeLockContract } from '../contract/lock-contract';
import { describeKindsContract } from '../kinds/kinds-contract';
import {
  CLUSTER_CLIENT_PACKAGES,
  redisClusterFactory,
  startRedisCluster,
  type TestRedisCluster,
} from '../support/redis-cluster';

/**
 * The shared contract suites (exclusive locks, then read/write locks and semaphores) against RedisLockBackend on
 * a real 3-master Redis Cluster, once per client (ioredis `Cluster`, node-redis `createCluster()`). The suites' keys
 * hash to slots all over the cluster, so their locks, waits and wake-ups run on all three masters. Needs
 * connectBackend('redis-cluster' / 'redis-node-cluster', ...) in test/support/backends.ts for the forked workers.
 */
let cluster: TestRedisCluster | undefined;

beforeAll(async () => {
  cluster = await startRedisCluster(3);
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
});

for (const clientPackage of CLUSTER_CLIENT_PACKAGES) {
  const factory = redisClusterFactory(() => {
    if (!cluster) throw new Error('the cluster is not running');
    return cluster;
  }, clientPackage);
  describeLockContract(factory);
  describeKindsContract(factory);
}
