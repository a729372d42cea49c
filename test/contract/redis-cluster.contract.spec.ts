import { describeLockContract } from './lock-contract';
import { describeKindsContract } from '../kinds/kinds-contract';
import { redisClusterFactory, startRedisCluster, type TestRedisCluster } from '../support/redis-cluster';

/**
 * The shared contract suites (exclusive locks, then read/write locks and semaphores) against RedisLockBackend on
 * a real 3-master Redis Cluster. The suites' keys hash to slots all over the cluster, so their locks, waits and
 * wake-ups run on all three masters. Needs connectBackend('redis-cluster', ...) in test/support/backends.ts for
 * the forked workers. node-redis-cluster.contract.spec.ts runs the same over node-redis `createCluster()`.
 */
let cluster: TestRedisCluster | undefined;

beforeAll(async () => {
  cluster = await startRedisCluster(3);
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
});

const factory = redisClusterFactory(() => {
  if (!cluster) throw new Error('the cluster is not running');
  return cluster;
});

describeLockContract(factory);
describeKindsContract(factory);
