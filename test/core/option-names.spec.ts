import { OnLeader } from '../../lib/leader-election/on-leader.decorator';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { RedlockBackend } from '../../lib/backends/redlock/redlock.backend';
import { redlockSettings } from '../../lib/backends/redlock/redlock-options';
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
      'Unknown option "sessiontimeout" in ZooKeeperLockBackend options. Known options: client, connectionString, sessionTimeout, spinDelay, authInfo, acl, reapInterval.',
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

/** Found from outside: each of these values was accepted, and failed later or not at all. */
describe('backend option values', () => {
  const fakeClient = () => ({}) as never;
  it.each([
    [
      'Redis recheckInterval as text',
      () => new RedisLockBackend({ url: 'redis://127.0.0.1:1', recheckInterval: '500' as never }),
      /recheckInterval must be a number of ms from 1 to 2147483647, got "500"/,
    ],
    [
      'Redis recheckInterval Infinity',
      () => new RedisLockBackend({ url: 'redis://127.0.0.1:1', recheckInterval: Infinity }),
      /recheckInterval must be a number of ms/,
    ],
    [
      'Redis recheckInterval past a timer',
      () => new RedisLockBackend({ url: 'redis://127.0.0.1:1', recheckInterval: 2 ** 31 }),
      /recheckInterval must be a number of ms/,
    ],
    [
      'Redis url not a string',
      () => new RedisLockBackend({ url: 42 as never }),
      /url must be a string such as 'redis:\/\/host:6379', got 42/,
    ],
    [
      'Redis client and url',
      () => new RedisLockBackend({ client: fakeClient(), url: 'redis://127.0.0.1:1' }),
      /either \{ client \}.*not both/,
    ],
    [
      'Redlock waiterTtl under 300',
      () => redlockSettings({ clients: [], waiterTtl: 1 }),
      /waiterTtl must be a whole number of ms >= 300, got 1/,
    ],
    [
      'Redlock recheckInterval past a timer',
      () => redlockSettings({ clients: [], recheckInterval: 2 ** 31 }),
      /recheckInterval must be at most 2147483647 ms/,
    ],
    [
      'Redlock requestTimeout past a timer',
      () => redlockSettings({ clients: [], requestTimeout: 2 ** 31 }),
      /requestTimeout must be at most 2147483647 ms/,
    ],
    [
      'ZooKeeper spinDelay negative',
      () => new ZooKeeperLockBackend({ connectionString: '127.0.0.1:1', spinDelay: -1 }),
      /Invalid spinDelay -1: use a number of milliseconds >= 0/,
    ],
    [
      'ZooKeeper spinDelay as text',
      () => new ZooKeeperLockBackend({ connectionString: '127.0.0.1:1', spinDelay: 'x' as never }),
      /Invalid spinDelay "x"/,
    ],
    [
      'ZooKeeper reapInterval fractional',
      () => new ZooKeeperLockBackend({ connectionString: '127.0.0.1:1', reapInterval: 0.5 }),
      /Invalid reapInterval 0.5: use a whole number of milliseconds from 0 \(reaping off\) to 86400000 \(a day\)/,
    ],
    [
      'ZooKeeper reapInterval past a timer',
      () => new ZooKeeperLockBackend({ connectionString: '127.0.0.1:1', reapInterval: 3e9 }),
      /Invalid reapInterval 3000000000: use a whole number of milliseconds from 0/,
    ],
    [
      'ZooKeeper reapInterval NaN',
      () => new ZooKeeperLockBackend({ connectionString: '127.0.0.1:1', reapInterval: NaN }),
      /Invalid reapInterval NaN/,
    ],
  ])('%s is refused with a TypeError naming it', (_name, create, message) => {
    expect(create).toThrow(TypeError);
    expect(create).toThrow(message);
  });
});
