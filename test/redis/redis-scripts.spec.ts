import Redis from 'ioredis';
import { ACQUIRE_SCRIPT } from '../../lib/backends/redis/acquire.lua';
import { EXTEND_SCRIPT } from '../../lib/backends/redis/extend.lua';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
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

  it('compute the same sha1 as the server', async () => {
    for (const script of [ACQUIRE_SCRIPT, EXTEND_SCRIPT, RELEASE_SCRIPT]) {
      expect(await admin.script('LOAD', script.source)).toBe(script.sha1);
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
});
