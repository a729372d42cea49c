import Redis from 'ioredis';
import { ACQUIRE_READ_SCRIPT } from '../../lib/backends/redis/acquire-read.lua';
import { ACQUIRE_SEMAPHORE_SCRIPT } from '../../lib/backends/redis/acquire-semaphore.lua';
import { ACQUIRE_SCRIPT } from '../../lib/backends/redis/acquire.lua';
import { EXTEND_SHARED_SCRIPT } from '../../lib/backends/redis/extend-shared.lua';
import { EXTEND_SCRIPT } from '../../lib/backends/redis/extend.lua';
import { IS_LOCKED_SCRIPT } from '../../lib/backends/redis/is-locked.lua';
import { LEAVE_LOCK_SCRIPT, LEAVE_SEMAPHORE_SCRIPT } from '../../lib/backends/redis/leave.lua';
import { RAISE_FENCE_SCRIPT } from '../../lib/backends/redis/raise-fence.lua';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { RELEASE_READ_SCRIPT } from '../../lib/backends/redis/release-read.lua';
import { RELEASE_SEMAPHORE_SCRIPT } from '../../lib/backends/redis/release-semaphore.lua';
import { RELEASE_SCRIPT } from '../../lib/backends/redis/release.lua';
import { startLocalRedis, type LocalRedisServer } from './local-redis-server';
import { held, lockRequest } from './redis-spec-helpers';

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
  let server: LocalRedisServer;
  let client: Redis;
  let admin: Redis;
  let backend: RedisLockBackend;

  beforeAll(async () => {
    server = await startLocalRedis();
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

  it('run EXISTS, SET, TIME, SET ... GET to acquire and GET, DEL, PUBLISH to release (default mode, uncontended)', async () => {
    const request = lockRequest('server-commands');
    await backend.tryAcquire(lockRequest('server-commands-warm-up')); // scripts loaded
    for (const round of [1, 2]) {
      // Round 1 creates the fencing counter, round 2 finds it: both cost the same.
      await admin.config('RESETSTAT');
      const grant = await backend.tryAcquire({ ...request, token: `${request.token}-${round}` });
      expect(grant).not.toBeNull();
      expect(await backend.release(held({ ...request, token: `${request.token}-${round}` }, grant!))).toBe(true);
      expect(await executedCommands(admin)).toEqual({ evalsha: 2, exists: 1, set: 2, time: 1, get: 1, del: 1, publish: 1 });
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

  it('after SCRIPT FLUSH, a batched renewal of many locks sends one EVAL, then the rest again as EVALSHA', async () => {
    const locks = await Promise.all(
      Array.from({ length: 50 }, async (_, index) => {
        const request = lockRequest(`noscript-batch-${index}`);
        const grant = await backend.tryAcquire(request);
        expect(grant).not.toBeNull();
        return held(request, grant!);
      }),
    );
    await admin.script('FLUSH');
    await admin.config('RESETSTAT');

    const results = await backend.extendMany(locks.map((lock) => ({ lock, ttl: 5_000 })));
    for (const result of results) expect(typeof result).toBe('number');
    expect(await commandStats(admin, 'eval')).toEqual({ calls: 1, failed: 0 });
    // 50 answered NOSCRIPT, then the 49 others ran.
    expect(await commandStats(admin, 'evalsha')).toEqual({ calls: 99, failed: 50 });
    for (const lock of locks) expect(await backend.release(lock)).toBe(true);
  });
});
