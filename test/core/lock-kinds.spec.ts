import { LockNotSupportedError, LockService, LockTimeoutError, MemoryLockBackend } from '../../lib';
import type { LockBackend } from '../../lib';
import { FaultyBackend } from './faulty-backend';

describe('lock kinds on the memory backend: read/write locks and semaphores', () => {
  let locks: LockService;

  beforeEach(() => {
    locks = new LockService(new MemoryLockBackend(), { keyPrefix: 'kinds' });
  });

  afterEach(() => locks.close());

  it('lets several readers hold at once and keeps writers (and exclusive locks) out meanwhile', async () => {
    const readers = await Promise.all([1, 2, 3].map(() => locks.acquire('doc', { mode: 'read', waitTimeout: 0 })));
    expect(readers.every((reader) => reader.isHeld && reader.mode === 'read')).toBe(true);
    expect(await locks.tryAcquire('doc', { mode: 'write' })).toBeNull();
    expect(await locks.tryAcquire('doc')).toBeNull();
    await Promise.all(readers.map((reader) => reader.release()));
    const writer = await locks.acquire('doc', { mode: 'write', waitTimeout: 0 });
    expect(await locks.tryAcquire('doc', { mode: 'read' })).toBeNull();
    await writer.release();
  });

  it('queues a reader that arrives after a waiting writer behind it, so readers cannot starve writers', async () => {
    const firstReader = await locks.acquire('doc', { mode: 'read' });
    const grants: string[] = [];
    const writer = locks.acquire('doc', { mode: 'write' }).then((h) => (grants.push('writer'), h));
    const lateReader = locks.acquire('doc', { mode: 'read' }).then((h) => (grants.push('late reader'), h));
    expect(await locks.tryAcquire('doc', { mode: 'read' })).toBeNull();
    await firstReader.release();
    const writerHandle = await writer;
    expect(grants).toEqual(['writer']);
    await writerHandle.release();
    await (await lateReader).release();
    expect(grants).toEqual(['writer', 'late reader']);
  });

  it('gives each grant its own, increasing fencing token', async () => {
    const a = await locks.acquire('doc', { mode: 'read' });
    const b = await locks.acquire('doc', { mode: 'read' });
    expect(b.fencingToken).toBeGreaterThan(a.fencingToken);
    await Promise.all([a.release(), b.release()]);
    const w = await locks.acquire('doc', { mode: 'write' });
    expect(w.fencingToken).toBeGreaterThan(b.fencingToken);
    await w.release();
  });

  it('admits at most `permits` holders of a semaphore, and the next one when a permit frees', async () => {
    const held = await Promise.all([1, 2, 3].map(() => locks.acquire('exports', { permits: 3, waitTimeout: 0 })));
    await expect(locks.acquire('exports', { permits: 3, waitTimeout: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
    const fourth = locks.acquire('exports', { permits: 3 });
    await held[0].release();
    const granted = await fourth;
    expect(granted.permits).toBe(3);
    // A semaphore is not the lock of the same name.
    const plain = await locks.acquire('exports', { waitTimeout: 0 });
    await Promise.all([...held.slice(1), granted, plain].map((h) => h.release()));
  });

  it('frees a permit whose holder stopped renewing after its ttl', async () => {
    const backend = new MemoryLockBackend();
    const grant = await backend.tryAcquire({ namespace: 'kinds', key: 's', token: 't1', ttl: 100, permits: 1 });
    expect(grant).not.toBeNull();
    const other = new LockService(backend, { keyPrefix: 'kinds' });
    const next = await other.acquire('s', { permits: 1, waitTimeout: 5_000 });
    expect(next.isHeld).toBe(true);
    await other.close();
  });

  it('rejects bad combinations and unknown modes before any server call', async () => {
    await expect(locks.acquire('x', { mode: 'read', permits: 2 })).rejects.toThrow(/cannot be combined/);
    await expect(locks.acquire('x', { mode: 'shared' as never })).rejects.toThrow(/Invalid mode "shared"/);
    await expect(locks.acquire('x', { permits: 0 })).rejects.toThrow(/Invalid permits 0/);
    await expect(locks.acquire('x', { permits: 1.5 })).rejects.toThrow(/Invalid permits 1.5/);
  });

  it('refuses kinds a backend does not implement, naming the backend, instead of falling back', async () => {
    const limited: LockBackend = new FaultyBackend();
    const service = new LockService(limited);
    await expect(service.acquire('x', { mode: 'read' })).rejects.toBeInstanceOf(LockNotSupportedError);
    await expect(service.acquire('x', { permits: 2 })).rejects.toThrow(
      /faulty-memory backend does not support permits/,
    );
    await service.close();
  });

  it('run(): a nested read inside a held write reuses it; upgrading a held read to write is refused', async () => {
    await locks.run(
      'doc',
      async (writer) => {
        await locks.run('doc', async (reader) => expect(reader).toBe(writer), { mode: 'read' });
      },
      { mode: 'write' },
    );
    await locks.run(
      'doc',
      async () => {
        await expect(locks.run('doc', async () => 'never', { mode: 'write' })).rejects.toBeInstanceOf(
          LockNotSupportedError,
        );
      },
      { mode: 'read' },
    );
  });
});

describe('LockService.inspect on the memory backend', () => {
  it('lists holders with holder id, fencing token, since and expiry, and waiters in order', async () => {
    const backend = new MemoryLockBackend();
    const a = new LockService(backend, { keyPrefix: 'ins', instanceId: 'a' });
    const b = new LockService(backend, { keyPrefix: 'ins', instanceId: 'b' });
    const holder = await a.acquire('file:9', { ttl: 5_000 });
    const w1 = b.acquire('file:9', { mode: 'read' });
    const w2 = a.acquire('file:9');
    const seen = await a.inspect('file:9');
    expect(seen).toMatchObject({ key: 'file:9', namespace: 'ins', backend: 'memory' });
    expect(seen.holders).toHaveLength(1);
    expect(seen.holders[0]).toMatchObject({ mode: 'exclusive', fencingToken: holder.fencingToken });
    expect(seen.holders[0].holder).toMatch(/\/a$/);
    expect(seen.holders[0].expiresAt!).toBeGreaterThan(Date.now());
    expect(seen.waiters!.map((w) => [w.mode, w.holder!.split('/').pop()])).toEqual([
      ['read', 'b'],
      ['exclusive', 'a'],
    ]);
    await holder.release();
    await (await w1).release();
    await (await w2).release();
    expect((await a.inspect('file:9')).holders).toEqual([]);
    await a.close();
    await b.close();
  });
});
