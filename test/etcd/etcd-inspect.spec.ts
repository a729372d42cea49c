import { Etcd3 } from 'etcd3';
import { EtcdLockBackend, LockService } from '../../lib';
import { sharedEtcdEndpoint } from '../support/shared-servers';

/** Waits until the inspection shows `count` waiters (queueing has no event of its own). */
async function waitForWaiters(locks: LockService, key: string, count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (((await locks.inspect(key)).waiters?.length ?? 0) < count) {
    if (Date.now() > deadline) throw new Error(`${count} waiters never queued on ${key}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('etcd: LockService.inspect', () => {
  let client: Etcd3;
  let a: LockService;
  let b: LockService;

  beforeAll(() => {
    client = new Etcd3({ hosts: sharedEtcdEndpoint() });
    a = new LockService(new EtcdLockBackend({ client }), { keyPrefix: 'inspect-etcd', instanceId: 'a' });
    b = new LockService(new EtcdLockBackend({ client }), { keyPrefix: 'inspect-etcd', instanceId: 'b' });
  });

  afterAll(async () => {
    await a.close();
    await b.close();
    client.close();
  });

  it('shows the holder with its fencing token and lease expiry, and the waiters in queue order', async () => {
    const holder = await a.acquire('file:1', { ttl: 10_000 });
    const reader = b.acquire('file:1', { mode: 'read', waitTimeout: 20_000 });
    await waitForWaiters(a, 'file:1', 1);
    const writer = a.acquire('file:1', { waitTimeout: 20_000 });
    await waitForWaiters(a, 'file:1', 2);

    const seen = await b.inspect('file:1');
    expect(seen).toMatchObject({ key: 'file:1', namespace: 'inspect-etcd', backend: 'etcd' });
    expect(seen.holders).toHaveLength(1);
    expect(seen.holders[0]).toMatchObject({ mode: 'exclusive', fencingToken: holder.fencingToken, holder: a.holderId });
    expect(seen.holders[0].expiresAt! - Date.now()).toBeGreaterThan(2_000);
    expect(seen.waiters!.map((w) => [w.mode, w.holder])).toEqual([
      ['read', b.holderId],
      ['exclusive', a.holderId],
    ]);

    await holder.release();
    const readerHandle = await reader;
    expect((await a.inspect('file:1')).holders.map((h) => h.mode)).toEqual(['read']);
    await readerHandle.release();
    await (await writer).release();
    expect(await a.inspect('file:1')).toMatchObject({ holders: [], waiters: [] });
  });

  it('shows semaphore permits apart from the lock of the same name', async () => {
    const permits = await Promise.all([a.acquire('jobs', { permits: 2 }), b.acquire('jobs', { permits: 2 })]);
    const seen = await a.inspect('jobs');
    expect(seen.holders.map((h) => h.permits)).toEqual([2, 2]);
    expect(seen.waiters).toEqual([]);
    await Promise.all(permits.map((p) => p.release()));
  });
});
