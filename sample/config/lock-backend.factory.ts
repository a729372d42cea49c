import { EtcdLockBackend, LockBackend, MemoryLockBackend, RedisLockBackend, ZooKeeperLockBackend } from '../../lib';
import type { SampleConfig } from './sample-config';

/**
 * The backend for LOCK_BACKEND. Given a URL or hosts, the Redis, etcd and ZooKeeper backends create their own
 * connection and close it when the app shuts down; pass `{ client }` instead to share one you own.
 */
export function createLockBackend(config: SampleConfig): LockBackend {
  switch (config.backend) {
    case 'memory':
      return new MemoryLockBackend();
    case 'redis':
      return new RedisLockBackend({ url: config.redisUrl });
    case 'etcd':
      return new EtcdLockBackend({ hosts: config.etcdHosts });
    case 'zookeeper':
      return new ZooKeeperLockBackend({ connectionString: config.zkHosts });
  }
}
