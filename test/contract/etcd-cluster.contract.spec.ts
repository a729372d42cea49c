import { describeLockContract } from './lock-contract';
import { startEtcdCluster, TestEtcdCluster } from '../support/etcd-cluster';
import { describeKindsContract } from '../kinds/kinds-contract';
import { etcdClusterFactory } from '../etcd/etcd-cluster-factory';

/** The shared suites against a 3-member etcd cluster, the backend talking to all three members. */
let cluster: TestEtcdCluster | undefined;

beforeAll(async () => {
  cluster = await startEtcdCluster(3);
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
}, 30_000);

const factory = etcdClusterFactory(() => {
  if (!cluster) throw new Error('the etcd cluster did not start (see beforeAll)');
  return cluster;
});

describe('3-member etcd cluster', () => {
  describeLockContract(factory);
  describeKindsContract(factory);
});
