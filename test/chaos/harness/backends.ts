import { Etcd3 } from 'etcd3';
import { EtcdLockBackend } from '../../../lib/backends/etcd/etcd-lock.backend';
import { BackendUnderTest, connectBackend, own } from '../../support/backends';

/**
 * The backends a chaos scenario can point at. memory, redis, etcd and redlock go through the shared test
 * connector; zookeeper is a hook that loads the helper its own test folder exports (servers: targets.ts).
 * 'redis-node' is the Redis backend over a node-redis client (RESP2) instead of ioredis, on the same server.
 */
export type ChaosBackendKind = 'memory' | 'redis' | 'redis-node' | 'etcd' | 'redlock' | 'zookeeper';

/** The single-server Redis backend, over either client: the same server, checks and bounds. */
export function isSingleRedis(kind: ChaosBackendKind): kind is 'redis' | 'redis-node' {
  return kind === 'redis' || kind === 'redis-node';
}

/**
 * Connects from a worker process. `address`: a redis:// URL; etcd endpoints, comma-separated (every member of
 * a cluster); redlock: comma-separated redis:// URLs; zookeeper: a connection string; '' for memory.
 */
export function connectChaosBackend(kind: ChaosBackendKind, address: string): BackendUnderTest {
  switch (kind) {
    case 'memory':
    case 'redis':
    case 'redis-node':
      return connectBackend(kind, address);
    case 'etcd': {
      const hosts = address.split(',');
      if (hosts.length === 1) return connectBackend('etcd', address);
      const client = new Etcd3({ hosts });
      const backend = new EtcdLockBackend({ client });
      return own(backend, () => client.close());
    }
    case 'redlock':
      return connectBackend('redlock', address);
    case 'zookeeper': {
      const { connectZooKeeperBackend } =
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        require('../../zookeeper/zookeeper-contract-factory') as typeof import('../../zookeeper/zookeeper-contract-factory');
      return connectZooKeeperBackend(address);
    }
  }
}
