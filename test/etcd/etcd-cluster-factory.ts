import { Etcd3 } from 'etcd3';
import { lockPrefix } from '../../lib/backends/etcd/etcd-key-layout';
import { EtcdLockBackend } from '../../lib/backends/etcd/etcd-lock.backend';
import { asEtcdLockState } from '../../lib/backends/etcd/etcd-lock-state';
import type { LockBackend } from '../../lib/backends/lock-backend.interface';
import { BackendFactory, BackendUnderTest, etcdFactory, worldOf } from '../support/backends';
import type { TestEtcdCluster } from '../support/etcd-cluster';
import { freeTestPort } from '../support/free-port';

/** A backend over every member (`hosts: [a, b, c]`), owning its client as an application would. */
function clusterBackend(cluster: () => TestEtcdCluster): BackendUnderTest {
  const backend: LockBackend = new EtcdLockBackend({ hosts: cluster().endpoints });
  return { backend, close: () => backend.close() };
}

async function withRawClient(cluster: () => TestEtcdCluster, work: (client: Etcd3) => Promise<unknown>): Promise<void> {
  const client = new Etcd3({ hosts: cluster().endpoints });
  try {
    await work(client);
  } finally {
    client.close();
  }
}

/**
 * The shared suites' BackendFactory for a multi-member cluster. Forked workers get one member's endpoint,
 * a different one each time (connectBackend takes a single address), so contenders talk to different
 * members of the same cluster; in-process backends get all of them.
 */
export function etcdClusterFactory(cluster: () => TestEtcdCluster): BackendFactory {
  let next = 0;
  return {
    ...etcdFactory,
    address: () => {
      const { endpoints } = cluster();
      return endpoints[next++ % endpoints.length];
    },
    create: async () => clusterBackend(cluster),
    world: () => worldOf(() => clusterBackend(cluster)),
    unreachable: async () => {
      const port = await freeTestPort();
      const backend = new EtcdLockBackend({ hosts: [`http://127.0.0.1:${port}`] });
      return { port, backend, close: () => backend.close() };
    },
    vanishings: [
      {
        name: "deletion of the lock's key range with a raw client of the cluster",
        run: (lock) =>
          withRawClient(cluster, (client) => client.delete().prefix(lockPrefix(lock.namespace, lock.key)).exec()),
      },
      {
        name: "revocation of the holder's lease with a raw client of the cluster",
        run: (lock) =>
          withRawClient(cluster, (client) =>
            client.leaseClient.leaseRevoke({ ID: asEtcdLockState(lock.state).leaseId }),
          ),
      },
    ],
  };
}
