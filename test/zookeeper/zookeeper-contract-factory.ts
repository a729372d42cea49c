import { asZooKeeperLockState } from '../../lib/backends/zookeeper/zookeeper-lock-state';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper-lock.backend';
import { worldOf, type BackendFactory, type BackendKind, type BackendUnderTest } from '../support/backends';
import { freeTestPort } from '../support/free-port';
import type { TestZooKeeperServer } from '../support/zookeeper-server';
import { AdminClient } from './zookeeper-spec-helpers';

/**
 * Session timeout of the suite's connections. The server's tickTime of 500 ms allows 1 s to 10 s; 4 s keeps a
 * crashed holder's lock within the suite's crash bound (3 s ttl + 5 s margin) while every lock the suite
 * holds for longer than a moment renews (at ttl / 3) well inside its validity of min(ttl, 4 s).
 */
export const CONTRACT_SESSION_TIMEOUT = 4_000;

/** A backend that owns its client, as an application passing `{ connectionString }` would. */
export function connectZooKeeperBackend(
  connectionString: string,
  sessionTimeout = CONTRACT_SESSION_TIMEOUT,
): BackendUnderTest {
  const backend = new ZooKeeperLockBackend({ connectionString, sessionTimeout, spinDelay: 100 });
  return { backend, close: () => backend.close() };
}

/**
 * The shared contract suite's view of ZooKeeper. `crossProcess` is false for now: the suite's forked workers
 * connect through test/support/backends.ts's connectBackend, which knows no 'zookeeper' yet; the cross-process
 * cases run in zookeeper.contract.spec.ts with this folder's own holder processes instead.
 */
export function zookeeperFactory(server: () => TestZooKeeperServer): BackendFactory {
  return {
    // BackendKind does not list 'zookeeper' yet (test/support/backends.ts is shared); see the spec's header.
    name: 'zookeeper' as BackendKind,
    crossProcess: false,
    fair: true,
    lockDelay: false,
    hasServer: true,
    // Renewals every ttl / 3 = 667 ms; any ttl works while it stays within the session timeout.
    minTtl: 2_000,
    address: () => server().connectionString,
    create: async () => connectZooKeeperBackend(server().connectionString),
    world: () => worldOf(() => connectZooKeeperBackend(server().connectionString)),
    unreachable: async () => {
      const port = await freeTestPort();
      return { port, ...connectZooKeeperBackend(`127.0.0.1:${port}`) };
    },
    vanishings: [
      {
        name: "deletion of the holder's node with a raw client, as an operator would",
        run: async (lock) => {
          const admin = await AdminClient.connect(server().connectionString);
          try {
            await admin.remove(asZooKeeperLockState(lock.state).nodePath);
          } finally {
            admin.close();
          }
        },
      },
    ],
  };
}
