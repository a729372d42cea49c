import { expectScenarioToPass } from './harness/expect-scenario';
import { chaosProfileName } from './harness/profile';
import { etcdClusterScenario } from './scenarios/etcd-cluster';
import { compactionScenario, leaseExpiredWhileQueuedScenario } from './scenarios/etcd-queue-faults';
import { etcdctlInteropScenario } from './scenarios/etcdctl-interop';

const TIMEOUT = 240_000;

describe('chaos on etcd', () => {
  it('6: a 3-member cluster keeps its queue across a leader kill, counts exactly, and fails clearly without a quorum', async () => {
    expectScenarioToPass(await etcdClusterScenario(chaosProfileName()));
  }, 400_000);

  it(
    '7: a waiter whose lease expired while queued never acts on its vanished key (etcd#11456)',
    async () => {
      expectScenarioToPass(await leaseExpiredWhileQueuedScenario(chaosProfileName()));
    },
    TIMEOUT,
  );

  it(
    '8: waiters survive watch compaction: no hang, no double grant',
    async () => {
      expectScenarioToPass(await compactionScenario(chaosProfileName()));
    },
    TIMEOUT,
  );

  it(
    '13: `etcdctl lock` and LockService exclude each other on the same name, both ways',
    async () => {
      expectScenarioToPass(await etcdctlInteropScenario(chaosProfileName()));
    },
    TIMEOUT,
  );
});
