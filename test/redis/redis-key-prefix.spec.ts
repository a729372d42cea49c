import Redis from 'ioredis';
import { redisLockKeys } from '../../lib/backends/redis/redis-keys';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import type { RedisLockBackendTuning } from '../../lib/backends/redis/redis-options';
import { LockService } from '../../lib/lock.service';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { eventually } from '../support/time';

/**
 * An ioredis client with `keyPrefix` prefixes every key a script gets, but no channel name. Waiters must still be
 * woken by the release message: with a re-check every 30 s, queue entries refreshed every 20 s (a third of the
 * waiter ttl) and holders' ttl of 20 s, only a message wakes them within the bound below.
 */
const PREFIX = 'app:';
const WOKEN_WITHIN_MS = 5_000;

describe('Redis with an ioredis keyPrefix', () => {
  let server: TestRedisServer;
  let admin: Redis;
  const opened: Array<{ locks: LockService; client: Redis }> = [];

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
  });

  afterAll(async () => {
    for (const { locks, client } of opened) {
      await locks.close();
      client.disconnect();
    }
    admin?.disconnect();
    await server?.stop();
  });

  function service(options: RedisLockBackendTuning = {}): LockService {
    const client = new Redis(server.url, { keyPrefix: PREFIX });
    const locks = new LockService(
      new RedisLockBackend({ client, recheckInterval: 30_000, waiterTtl: 60_000, ...options }),
      {
        keyPrefix: 'locks',
      },
    );
    opened.push({ locks, client });
    return locks;
  }

  async function waitersOn(key: string): Promise<number> {
    const reply = (await admin.pubsub('NUMSUB', redisLockKeys('locks', key).channel)) as [string, number];
    return Number(reply[1]);
  }

  /** Holds `key` in `holderMode`, queues a `waiterMode` waiter, releases, and returns how long the wake took. */
  async function wakeAfterRelease(
    locks: { holder: LockService; waiter: LockService },
    key: string,
    holderMode: 'exclusive' | 'write',
    waiterMode: 'exclusive' | 'read',
  ): Promise<number> {
    const held = await locks.holder.acquire(key, { ttl: 20_000, mode: holderMode });
    const waiting = locks.waiter.acquire(key, { ttl: 20_000, waitTimeout: 15_000, mode: waiterMode });
    await eventually(async () => (await waitersOn(key)) > 0, 'the waiter subscribed');
    const releasedAt = performance.now();
    await held.release();
    const granted = await waiting;
    const took = performance.now() - releasedAt;
    expect(granted.fencingToken).toBeGreaterThan(held.fencingToken);
    await granted.release();
    return took;
  }

  it('keeps the prefix on every key, and leaves only the expiring fencing counter after release', async () => {
    const locks = service();
    const lock = await locks.acquire('doc:1', { ttl: 20_000 });
    expect(await admin.exists(`${PREFIX}locks:{doc:1}`)).toBe(1);
    expect(await admin.exists('locks:{doc:1}')).toBe(0);
    await lock.release();
    expect(await admin.keys(`${PREFIX}locks:{doc:1}*`)).toEqual([`${PREFIX}locks:{doc:1}:fence`]);
  });

  it("wakes an exclusive waiter of another process by the release message (fairness 'none')", async () => {
    const took = await wakeAfterRelease(
      { holder: service({ fairness: 'none' }), waiter: service({ fairness: 'none' }) },
      'none-exclusive',
      'exclusive',
      'exclusive',
    );
    expect(took).toBeLessThan(WOKEN_WITHIN_MS);
  });

  it('wakes a reader queued behind a writer by the release message (FIFO)', async () => {
    const took = await wakeAfterRelease({ holder: service(), waiter: service() }, 'fifo-read', 'write', 'read');
    expect(took).toBeLessThan(WOKEN_WITHIN_MS);
  });

  it('hands an exclusive lock to the next waiter of another process (FIFO)', async () => {
    const took = await wakeAfterRelease(
      { holder: service(), waiter: service() },
      'fifo-exclusive',
      'exclusive',
      'exclusive',
    );
    expect(took).toBeLessThan(WOKEN_WITHIN_MS);
  });
});
