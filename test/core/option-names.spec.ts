import { OnLeader } from '../../lib/leader-election/on-leader.decorator';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { RedlockBackend } from '../../lib/backends/redlock/redlock.backend';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper-lock.backend';

/**
 * A misspelt option would otherwise be ignored, silently: `fairnes: 'none'` leaves FIFO on. Each constructor
 * refuses it before it creates a client, so nothing connects (no server is needed here).
 */
describe('option names', () => {
  const cases: [string, () => unknown, string][] = [
    [
      'RedisLockBackend',
      () => new RedisLockBackend({ url: 'redis://127.0.0.1:1', fairnes: 'none' } as never),
      'Unknown option "fairnes" in RedisLockBackend options. Known options: client, url, redisOptions, clientPackage, recheckInterval, fairness, waiterTtl, fenceRetention.',
    ],
    [
      'RedlockBackend',
      () => new RedlockBackend({ clients: [], retries: 3 } as never),
      'Unknown option "retries" in RedlockBackend options. Known options: clients, driftFactor,',
    ],
    [
      'ZooKeeperLockBackend',
      () => new ZooKeeperLockBackend({ connectionString: '127.0.0.1:1', sessiontimeout: 5_000 } as never),
      'Unknown option "sessiontimeout" in ZooKeeperLockBackend options. Known options: client, connectionString, sessionTimeout, spinDelay, authInfo, acl.',
    ],
    [
      '@OnLeader',
      () => OnLeader('compactor', { tll: 5_000 } as never),
      'Unknown option "tll" in @OnLeader(\'compactor\') options. Known options: value, ttl.',
    ],
  ];

  it.each(cases)('%s refuses a name it does not know, listing the ones it does', (_name, create, message) => {
    expect(create).toThrow(TypeError);
    expect(create).toThrow(message);
  });
});
