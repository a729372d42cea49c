import Redis from 'ioredis';
import { createSentinel } from 'redis';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { LockBackendError } from '../../lib/errors';
import { LockService } from '../../lib/lock.service';
import { freeTestPort } from '../support/free-port';
import { startRedis, startRedisSentinel, type TestRedisServer, type TestRedisSentinel } from '../support/redis-server';

/**
 * A client configured by Redis Sentinel (ioredis `sentinels` + `name`), against a real master and sentinel. Its
 * `host` and `port` options are ioredis' defaults (localhost:6379), not the master's, so errors name the sentinels.
 */
describe('Redis through Sentinel (ioredis)', () => {
  let master: TestRedisServer;
  let sentinel: TestRedisSentinel;

  beforeAll(async () => {
    master = await startRedis();
    sentinel = await startRedisSentinel(master.port);
  });

  afterAll(async () => {
    await sentinel?.stop();
    await master?.stop();
  });

  it('locks on the master the sentinel names, with increasing fencing tokens, and names the sentinels', async () => {
    const client = new Redis({ sentinels: [{ host: '127.0.0.1', port: sentinel.port }], name: sentinel.masterName });
    const locks = new LockService(new RedisLockBackend({ client }));
    try {
      expect(locks.backend.address).toBe(`sentinel(${sentinel.masterName} @ 127.0.0.1:${sentinel.port})`);
      const first = await locks.acquire('sentinel:1', { ttl: 5_000 });
      expect(await locks.tryAcquire('sentinel:1')).toBeNull();
      await first.release();
      const second = await locks.acquire('sentinel:1', { ttl: 5_000 });
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      // The lock is on the master itself.
      const direct = new Redis(master.url);
      try {
        expect((await direct.keys('*sentinel:1*')).length).toBeGreaterThan(0);
      } finally {
        direct.disconnect();
      }
      await second.release();
    } finally {
      await locks.close();
      client.disconnect();
    }
  });

  it('refuses a node-redis createSentinel() client, saying to use ioredis for Sentinel', () => {
    const client = createSentinel({
      name: sentinel.masterName,
      sentinelRootNodes: [{ host: '127.0.0.1', port: sentinel.port }],
    });
    expect(() => new RedisLockBackend({ client: client as never })).toThrow(
      /createSentinel\(\) is not supported: use an ioredis client with \{ sentinels, name \}/,
    );
  });

  it('fails with a LockBackendError naming the sentinels and what to check when none answers', async () => {
    const deadPort = await freeTestPort();
    const locks = new LockService(
      new RedisLockBackend({ redisOptions: { sentinels: [{ host: '127.0.0.1', port: deadPort }], name: 'mymaster' } }),
      { operationTimeout: 3_000 },
    );
    try {
      const error: unknown = await locks.acquire('sentinel:dead', { waitTimeout: 0 }).then(
        () => new Error('acquired through a dead sentinel'),
        (rejection: unknown) => rejection,
      );
      expect(error).toBeInstanceOf(LockBackendError);
      const message = (error as LockBackendError).message;
      expect(message).toContain(`sentinel(mymaster @ 127.0.0.1:${deadPort})`);
      expect(message).toContain('No sentinel answered');
      expect(message).not.toContain('localhost:6379');
    } finally {
      await locks.close();
    }
  });
});
