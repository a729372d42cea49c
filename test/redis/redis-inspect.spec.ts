import Redis from 'ioredis';
import { LockService, RedisLockBackend } from '../../lib';
import { sharedRedisUrl } from '../support/shared-servers';

async function waitForWaiters(locks: LockService, key: string, count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (((await locks.inspect(key)).waiters?.length ?? 0) < count) {
    if (Date.now() > deadline) throw new Error(`${count} waiters never queued on ${key}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('Redis: LockService.inspect', () => {
  let client: Redis;

  beforeAll(() => {
    client = new Redis(sharedRedisUrl());
  });

  afterAll(() => client.quit());

  it('shows the writer with its holder id, fencing token and expiry; readers and permits with theirs', async () => {
    const locks = new LockService(new RedisLockBackend({ client, fairness: 'none' }), {
      keyPrefix: 'inspect-redis',
      instanceId: 'api 1',
    });
    const writer = await locks.acquire('file:1', { ttl: 10_000 });
    const seen = await locks.inspect('file:1');
    expect(seen).toMatchObject({ key: 'file:1', backend: 'redis' });
    expect(seen.holders).toEqual([
      expect.objectContaining({
        mode: 'exclusive',
        holder: locks.holderId.replace(/\s/g, '_'),
        fencingToken: writer.fencingToken,
      }),
    ]);
    expect(seen.holders[0].expiresAt! - Date.now()).toBeGreaterThan(5_000);
    // With fairness 'none' waiters race for the key; nothing on the server lists them.
    expect(seen.waiters).toBeUndefined();
    await writer.release();

    const readers = await Promise.all([
      locks.acquire('file:1', { mode: 'read' }),
      locks.acquire('file:1', { mode: 'read' }),
    ]);
    const permits = await Promise.all([locks.acquire('file:1', { permits: 3 })]);
    const shared = await locks.inspect('file:1');
    expect(shared.holders.map((h) => [h.mode, h.permits])).toEqual([
      ['read', undefined],
      ['read', undefined],
      ['exclusive', 3],
    ]);
    expect(shared.holders.every((h) => h.expiresAt! > Date.now())).toBe(true);
    await Promise.all([...readers, ...permits].map((h) => h.release()));
    expect((await locks.inspect('file:1')).holders).toEqual([]);
    await locks.close();
  });

  it('lists FIFO waiters in queue order', async () => {
    const fifo = new LockService(new RedisLockBackend({ client, fairness: 'fifo' }), {
      keyPrefix: 'inspect-redis',
      instanceId: 'q',
    });
    const holder = await fifo.acquire('file:2', { ttl: 10_000 });
    const first = fifo.acquire('file:2', { mode: 'read', waitTimeout: 20_000 });
    await waitForWaiters(fifo, 'file:2', 1);
    const second = fifo.acquire('file:2', { waitTimeout: 20_000 });
    await waitForWaiters(fifo, 'file:2', 2);
    expect((await fifo.inspect('file:2')).waiters!.map((w) => w.mode)).toEqual(['read', 'exclusive']);
    await holder.release();
    await (await first).release();
    await (await second).release();
    await fifo.close();
  });
});
