import Redis from 'ioredis';
import type { AcquireRequest, HeldLock } from '../../lib/backends/lock-backend.interface';
import { ACQUIRE_READ_SCRIPT } from '../../lib/backends/redis/acquire-read.lua';
import { ACQUIRE_SEMAPHORE_SCRIPT } from '../../lib/backends/redis/acquire-semaphore.lua';
import { ACQUIRE_SCRIPT } from '../../lib/backends/redis/acquire.lua';
import { EXTEND_SHARED_SCRIPT } from '../../lib/backends/redis/extend-shared.lua';
import { EXTEND_MANY_SCRIPT, EXTEND_SCRIPT } from '../../lib/backends/redis/extend.lua';
import { IS_LOCKED_SCRIPT } from '../../lib/backends/redis/is-locked.lua';
import { LEAVE_LOCK_SCRIPT, LEAVE_SEMAPHORE_SCRIPT } from '../../lib/backends/redis/leave.lua';
import { RAISE_FENCE_SCRIPT } from '../../lib/backends/redis/raise-fence.lua';
import { redisLockKeys } from '../../lib/backends/redis/redis-keys';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { RELEASE_READ_SCRIPT } from '../../lib/backends/redis/release-read.lua';
import { RELEASE_SEMAPHORE_SCRIPT } from '../../lib/backends/redis/release-semaphore.lua';
import { RELEASE_SCRIPT } from '../../lib/backends/redis/release.lua';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { eventually, held, lockRequest, NAMESPACE } from './redis-spec-helpers';

/** calls / failed_calls of one command from INFO commandstats. */
async function commandStats(client: Redis, command: string): Promise<{ calls: number; failed: number }> {
  const info = await client.info('commandstats');
  const line = info.split('\r\n').find((entry) => entry.startsWith(`cmdstat_${command}:`));
  const field = (name: string) => Number(new RegExp(`[:,]${name}=(\\d+)`).exec(line ?? '')?.[1] ?? 0);
  return { calls: field('calls'), failed: field('failed_calls') };
}

/** Every command the server executed (including those inside scripts), by name, without INFO and CONFIG. */
async function executedCommands(client: Redis): Promise<Record<string, number>> {
  const info = await client.info('commandstats');
  const counts: Record<string, number> = {};
  for (const line of info.split('\r\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (match && !/^(info|config)/.test(match[1])) counts[match[1]] = Number(match[2]);
  }
  return counts;
}

describe('Redis scripts', () => {
  let server: TestRedisServer;
  let client: Redis;
  let admin: Redis;
  let backend: RedisLockBackend;

  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.url);
    admin = new Redis(server.url);
    backend = new RedisLockBackend({ client });
  });

  afterAll(async () => {
    await backend?.close();
    await Promise.all([client?.quit(), admin?.quit()]);
    await server?.stop();
  });

  const ALL_SCRIPTS = [
    ACQUIRE_SCRIPT,
    ACQUIRE_READ_SCRIPT,
    ACQUIRE_SEMAPHORE_SCRIPT,
    EXTEND_SCRIPT,
    EXTEND_SHARED_SCRIPT,
    EXTEND_MANY_SCRIPT,
    RELEASE_SCRIPT,
    RELEASE_READ_SCRIPT,
    RELEASE_SEMAPHORE_SCRIPT,
    LEAVE_LOCK_SCRIPT,
    LEAVE_SEMAPHORE_SCRIPT,
    IS_LOCKED_SCRIPT,
    RAISE_FENCE_SCRIPT,
  ];

  it('compile on the server and compute the same sha1 as the server', async () => {
    for (const script of ALL_SCRIPTS) {
      expect(await admin.script('LOAD', script.source)).toBe(script.sha1);
    }
    expect(new Set(ALL_SCRIPTS.map((script) => script.name)).size).toBe(ALL_SCRIPTS.length);
  });

  it.each([
    ['exclusive, default mode', 'none', {}],
    ['exclusive, FIFO mode', 'fifo', {}],
    ['read lock', 'none', { mode: 'read' }],
    ['semaphore', 'none', { permits: 3 }],
  ] as const)('cost one round trip each for an uncontended acquire and release (%s)', async (_, fairness, kind) => {
    const own = new RedisLockBackend({ client, fairness });
    const request = { ...lockRequest(`one-trip-${fairness}-${Object.keys(kind).join()}`), ...kind };
    await own.tryAcquire({ ...lockRequest('warm-up'), ...kind }); // scripts loaded, connection ready
    const sent = jest.spyOn(client, 'sendCommand');
    const grant = await own.tryAcquire(request);
    expect(grant).not.toBeNull();
    expect(sent).toHaveBeenCalledTimes(1);
    expect(await own.release(held(request, grant!))).toBe(true);
    expect(sent).toHaveBeenCalledTimes(2);
    expect(sent.mock.calls.map(([command]) => command.name)).toEqual(['evalsha', 'evalsha']);
    sent.mockRestore();
    await own.close();
  });

  it('run EXISTS, SET, TIME, SET ... GET to acquire and GET, DEL to release, with no PUBLISH (default mode, uncontended)', async () => {
    const request = lockRequest('server-commands');
    await backend.tryAcquire(lockRequest('server-commands-warm-up')); // scripts loaded
    for (const round of [1, 2]) {
      // Round 1 creates the fencing counter, round 2 finds it: both cost the same.
      await admin.config('RESETSTAT');
      const grant = await backend.tryAcquire({ ...request, token: `${request.token}-${round}` });
      expect(grant).not.toBeNull();
      expect(await backend.release(held({ ...request, token: `${request.token}-${round}` }, grant!))).toBe(true);
      expect(await executedCommands(admin)).toEqual({ evalsha: 2, exists: 1, set: 2, time: 1, get: 1, del: 1 });
    }
  });

  it('publish on release only when a waiter marked the lock: a writer, or a reader behind it', async () => {
    for (const mode of ['exclusive', 'read'] as const) {
      const key = `marked-${mode}`;
      const holder = lockRequest(key);
      const grant = await backend.tryAcquire(holder);
      const waiter: AcquireRequest = { ...lockRequest(key), mode };
      const waiting = backend.acquire(waiter, new AbortController().signal);
      await eventually(async () => ((await admin.get(redisLockKeys(NAMESPACE, key).lock)) ?? '').endsWith(' w'));
      await admin.config('RESETSTAT');
      expect(await backend.release(held(holder, grant!))).toBe(true);
      expect((await executedCommands(admin)).publish).toBe(1);
      expect(await backend.release(held(waiter, await waiting))).toBe(true);
    }
  });

  it('cost one EVAL after SCRIPT FLUSH, then run as EVALSHA again', async () => {
    await admin.script('FLUSH');
    await admin.config('RESETSTAT');

    const first = lockRequest('noscript-1');
    const grant = await backend.tryAcquire(first);
    expect(grant).not.toBeNull();
    expect(await commandStats(admin, 'evalsha')).toEqual({ calls: 1, failed: 1 });
    expect(await commandStats(admin, 'eval')).toEqual({ calls: 1, failed: 0 });

    expect(await backend.tryAcquire(lockRequest('noscript-2'))).not.toBeNull();
    expect(await commandStats(admin, 'evalsha')).toEqual({ calls: 2, failed: 1 });
    expect(await commandStats(admin, 'eval')).toEqual({ calls: 1, failed: 0 });

    // extend and release recover the same way.
    await admin.script('FLUSH');
    expect(await backend.extend(held(first, grant!), 5_000)).not.toBeNull();
    expect(await backend.release(held(first, grant!))).toBe(true);
  });

  async function holdMany(prefix: string, count: number, kind: Partial<AcquireRequest> = {}): Promise<HeldLock[]> {
    return Promise.all(
      Array.from({ length: count }, async (_, index) => {
        const request = { ...lockRequest(`${prefix}-${index}`), ...kind };
        const grant = await backend.tryAcquire(request);
        expect(grant).not.toBeNull();
        return held(request, grant!);
      }),
    );
  }

  it('renew a batch of exclusive locks with one script call per 100, each lock with its own result', async () => {
    const exclusive = await holdMany('extend-many', 150);
    const readers = await holdMany('extend-many-read', 2, { mode: 'read' });
    // One lock is no longer ours: its result alone is null.
    await admin.del(redisLockKeys(exclusive[7].namespace, exclusive[7].key).lock);
    await backend.extendMany([exclusive[0], exclusive[1], readers[0]].map((lock) => ({ lock, ttl: 10_000 }))); // scripts loaded
    await admin.config('RESETSTAT');

    const results = await backend.extendMany([...exclusive, ...readers].map((lock) => ({ lock, ttl: 60_000 })));
    expect(results.map((result, index) => (index === 7 ? result : typeof result))).toEqual([
      ...Array.from({ length: 150 }, (_, index) => (index === 7 ? null : 'number')),
      'number',
      'number',
    ]);
    // 150 exclusive locks in chunks of 100 and 50, the two read locks one call each.
    expect(await commandStats(admin, 'evalsha')).toEqual({ calls: 4, failed: 0 });
    expect(await commandStats(admin, 'pexpire')).toEqual({ calls: 149, failed: 0 });
    expect(await admin.pttl(redisLockKeys(exclusive[149].namespace, exclusive[149].key).lock)).toBeGreaterThan(30_000);
    for (const lock of [...exclusive, ...readers]) await backend.release(lock);
  });

  it('after SCRIPT FLUSH, a batched renewal sends one EVAL per script, then the rest again as EVALSHA', async () => {
    const locks = await holdMany('noscript-batch', 250);
    await admin.script('FLUSH');
    await admin.config('RESETSTAT');

    const results = await backend.extendMany(locks.map((lock) => ({ lock, ttl: 5_000 })));
    for (const result of results) expect(typeof result).toBe('number');
    expect(await commandStats(admin, 'eval')).toEqual({ calls: 1, failed: 0 });
    // Chunks of 100, 100 and 50 answered NOSCRIPT; the first was run by the EVAL, the other two again.
    expect(await commandStats(admin, 'evalsha')).toEqual({ calls: 5, failed: 3 });
    for (const lock of locks) expect(await backend.release(lock)).toBe(true);
  });
});
