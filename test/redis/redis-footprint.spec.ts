import Redis from 'ioredis';
import { redisLockKeys } from '../../lib/backends/redis/redis-keys';
import { RedisLockBackend, type RedisLockBackendTuning } from '../../lib/backends/redis/redis-lock.backend';
import type { LockHandle } from '../../lib/lock-handle';
import { LockService } from '../../lib/lock.service';
import { uniqueNamespace } from '../support/backends';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { eventually, held, lockRequest } from './redis-spec-helpers';

/** What the server may take beyond a key's expiry to drop it (active expiry runs 10 times a second). */
const EXPIRY_SLACK = 3_000;

/** Every key under `namespace` (SCAN skips keys whose expiry has passed). The namespace has no glob characters. */
export async function keysOf(client: Redis, namespace: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', `${namespace}:*`, 'COUNT', 1_000);
    found.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return found;
}

/** Our keys that would never expire (PTTL -1). */
async function keysWithoutExpiry(client: Redis, namespace: string): Promise<string[]> {
  const keys = await keysOf(client, namespace);
  const ttls = await Promise.all(keys.map((key) => client.pttl(key)));
  return keys.filter((_, index) => ttls[index] === -1);
}

describe('Redis footprint: nothing stays per lock name once its locks are gone', () => {
  let server: TestRedisServer;
  let admin: Redis;
  const opened: { close(): Promise<unknown> }[] = [];

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
  });

  afterAll(async () => {
    await admin?.quit();
    await server?.stop();
  });

  afterEach(async () => {
    for (const resource of opened.splice(0).reverse()) await resource.close();
  });

  function backend(tuning: RedisLockBackendTuning = {}): RedisLockBackend {
    const client = new Redis(server.url);
    const created = new RedisLockBackend({ client, ...tuning });
    opened.push({ close: () => client.quit() }, created);
    return created;
  }

  function service(namespace: string, tuning: RedisLockBackendTuning = {}): LockService {
    const locks = new LockService(backend(tuning), { keyPrefix: namespace });
    opened.push(locks);
    return locks;
  }

  it('gives a larger token after the fencing counter expired than before it', async () => {
    const namespace = uniqueNamespace('expired-counter');
    const locks = backend({ fenceRetention: 50 });
    const first = lockRequest('order:1', 200, namespace);
    const grant = await locks.tryAcquire(first);
    expect(await locks.release(held(first, grant!))).toBe(true);
    const fence = redisLockKeys(namespace, 'order:1').fence;
    const pttl = await admin.pttl(fence);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(250);
    await eventually(async () => (await admin.exists(fence)) === 0, 250 + EXPIRY_SLACK);

    const second = lockRequest('order:1', 200, namespace);
    const next = await locks.tryAcquire(second);
    expect(next!.fencingToken).toBeGreaterThan(grant!.fencingToken);
    await locks.release(held(second, next!));
  });

  it('keeps a counter that is ahead of the clock until the clock has passed it', async () => {
    const namespace = uniqueNamespace('ahead');
    const locks = backend({ fenceRetention: 50 });
    const fence = redisLockKeys(namespace, 'k').fence;
    const [seconds] = await admin.time();
    const ahead = (BigInt(seconds) + 30n) * 1_000_000n;
    await admin.set(fence, ahead.toString());
    const request = lockRequest('k', 200, namespace);
    const grant = await locks.tryAcquire(request);
    expect(grant!.fencingToken).toBe(ahead + 1n);
    await locks.release(held(request, grant!));
    // Not the ttl + retention (250 ms): about 30 s, when the server's clock passes the counter.
    expect(await admin.pttl(fence)).toBeGreaterThan(25_000);
  });

  it('leaves no key of 1,000 names taken and released once ttl + retention passed', async () => {
    const namespace = uniqueNamespace('per-order');
    const ttl = 500;
    const retention = 300;
    const locks = service(namespace, { fenceRetention: retention });
    await admin.flushall(); // DBSIZE below counts every key: start from an empty server
    const names = Array.from({ length: 1_000 }, (_, index) => `order:${index}`);
    for (let start = 0; start < names.length; start += 100) {
      const handles = await Promise.all(
        names.slice(start, start + 100).map((name) => locks.acquire(name, { ttl, waitTimeout: 0 })),
      );
      await Promise.all(handles.map((handle) => handle.release()));
    }
    const releasedAt = Date.now();
    expect((await keysOf(admin, namespace)).length).toBeGreaterThan(0); // the counters, for now
    expect(await keysWithoutExpiry(admin, namespace)).toEqual([]);
    await eventually(async () => (await keysOf(admin, namespace)).length === 0, ttl + retention + EXPIRY_SLACK);
    expect(Date.now() - releasedAt).toBeLessThan(ttl + retention + EXPIRY_SLACK);
    // Not only hidden from SCAN: the server dropped them (active expiry).
    await eventually(async () => (await admin.dbsize()) === 0, EXPIRY_SLACK);
  }, 30_000);

  it.each([
    ['none', { fairness: 'none' }],
    ['fifo', { fairness: 'fifo' }],
  ] as [string, RedisLockBackendTuning][])(
    'never leaves one of our keys without expiry while locks are held and waited for (fairness %s)',
    async (_, tuning) => {
      const namespace = uniqueNamespace('pttl');
      const locks = service(namespace, { ...tuning, fenceRetention: 300 });
      const other = service(namespace, { ...tuning, fenceRetention: 300 });
      const writer = await locks.acquire('doc', { ttl: 2_000 });
      const readers = await Promise.all([1, 2].map(() => locks.acquire('shared', { mode: 'read', ttl: 2_000 })));
      const permits = await Promise.all([1, 2].map(() => locks.acquire('pool', { permits: 2, ttl: 2_000 })));
      // Waiters of each kind: a writer (intent or queue entry) behind the writer and behind the readers,
      // a reader behind the writer, a semaphore waiter behind the full pool.
      // Each releases at once when granted, so the two waiters of 'doc' do not wait on each other.
      const withoutExpiryWhileHeld: string[] = [];
      const waitFor = async (granted: Promise<LockHandle>) => {
        const handle = await granted;
        withoutExpiryWhileHeld.push(...(await keysWithoutExpiry(admin, namespace)));
        await handle.release();
      };
      const waiting = [
        waitFor(other.acquire('doc', { ttl: 2_000, waitTimeout: 10_000 })),
        waitFor(other.acquire('doc', { mode: 'read', ttl: 2_000, waitTimeout: 10_000 })),
        waitFor(other.acquire('shared', { ttl: 2_000, waitTimeout: 10_000 })),
        waitFor(other.acquire('pool', { permits: 2, ttl: 2_000, waitTimeout: 10_000 })),
      ];
      const expectedKinds = tuning.fairness === 'fifo' ? [':queue', ':semaphore:queue'] : [':writers-waiting'];
      await eventually(async () => {
        const keys = await keysOf(admin, namespace);
        return expectedKinds.every((suffix) => keys.some((key) => key.endsWith(suffix)));
      });
      expect(await keysWithoutExpiry(admin, namespace)).toEqual([]);

      await Promise.all([writer, ...readers, ...permits].map((handle) => handle.release()));
      await Promise.all(waiting);
      expect(withoutExpiryWhileHeld).toEqual([]);
      await eventually(async () => (await keysOf(admin, namespace)).length === 0, 2_000 + 300 + EXPIRY_SLACK);
    },
    30_000,
  );
});
