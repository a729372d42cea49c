import { LockService, MemoryLockBackend } from '../../lib';
import { LockSet } from '../../lib/interceptors/lock-set';
import { RecordingBackend } from '../support/recording-backend';

/**
 * The synchronous path an in-process backend allows (LockService.acquireIfFreeNow, LockHandle.releaseNow,
 * LockSet.acquireNow/releaseNow): it must give the same answers as the promise path, or step aside.
 */
describe('in-process fast path', () => {
  let backend: MemoryLockBackend;
  let locks: LockService;

  beforeEach(() => {
    backend = new MemoryLockBackend();
    locks = new LockService(backend, { keyPrefix: 'fast' });
  });

  afterEach(async () => {
    await locks.close();
  });

  it('grants a free key and releases it without awaiting anything', async () => {
    const lock = locks.acquireIfFreeNow('file:1')!;
    expect(lock.isHeld).toBe(true);
    expect(locks.heldCount).toBe(1);
    expect(lock.releaseNow()).toBe(true);
    expect(lock.state).toBe('released');
    expect(locks.heldCount).toBe(0);
    // The next grant follows at once, with a higher fencing token.
    const next = locks.acquireIfFreeNow('file:1')!;
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    expect(next.releaseNow()).toBe(true);
    await expect(lock.release()).resolves.toBeUndefined();
  });

  it('steps aside when the key is held or someone queues for it', async () => {
    const held = await locks.acquire('file:2');
    expect(locks.acquireIfFreeNow('file:2')).toBeUndefined();
    const queued = locks.acquire('file:2', { waitTimeout: 10_000 });
    await held.release();
    const waiter = await queued;
    expect(locks.acquireIfFreeNow('file:2')).toBeUndefined();
    await waiter.release();
  });

  it('is not taken on a backend without a synchronous grant, or while an instrumentation wraps acquisitions', async () => {
    const remote = new LockService(new RecordingBackend(new MemoryLockBackend()), { keyPrefix: 'fast' });
    expect(remote.acquireIfFreeNow('file:3')).toBeUndefined();
    const viaPromise = await remote.acquire('file:3');
    expect(viaPromise.releaseNow()).toBe(false);
    await viaPromise.release();
    await remote.close();

    const stop = locks.instrument({ traceAcquire: (_info, run) => run() });
    expect(locks.acquireIfFreeNow('file:3')).toBeUndefined();
    stop();
    expect(locks.acquireIfFreeNow('file:3')?.releaseNow()).toBe(true);
  });

  it('rejects an invalid key synchronously, before touching the backend', () => {
    expect(() => locks.acquireIfFreeNow('')).toThrow(/empty/i);
  });

  it('takes several keys in sorted order, or none of them when one is busy', async () => {
    const busy = await locks.acquire('b');
    expect(LockSet.acquireNow(locks, ['c', 'b', 'a'], {})).toBeUndefined();
    // "a" was taken and given back at once.
    expect(await locks.isLocked('a')).toBe(false);
    await busy.release();
    const set = LockSet.acquireNow(locks, ['c', 'b', 'a', 'b'], {})!;
    expect([...set.handles.keys()]).toEqual(['a', 'b', 'c']);
    expect(set.releaseNow()).toBe(true);
    expect(locks.heldCount).toBe(0);
  });

  it('hands a lost lock to the promise path, which reports nothing to release', async () => {
    const lock = locks.acquireIfFreeNow('file:4', { ttl: 100 })!;
    // A blocked event loop outlives the validity: the watchdog must not renew it, and reports the loss.
    const end = Date.now() + 200;
    while (Date.now() < end) {
      /* spin */
    }
    await new Promise((resolve) => lock.onLost(resolve));
    expect(lock.releaseNow()).toBe(false);
    await expect(lock.release()).resolves.toBeUndefined();
    // The lost holder's expiry freed the key on the server side too.
    expect(await locks.isLocked('file:4')).toBe(false);
  });
});
