import { performance } from 'node:perf_hooks';
import type { LockHandle } from '../../../lib/lock-handle';
import { since, sleep } from '../../support/time';
import type { ContractContext } from '../contract-context';

/** A holder ttl far above every bound below, so only a server-driven wake-up can pass. */
const LONG_TTL = 20_000;

export function waitingCases(ctx: ContractContext): void {
  it("a waiter is woken when the holder releases, long before the holder's ttl would have run out", async () => {
    const holder = ctx.service();
    const waiter = ctx.service();
    const held = await holder.acquire('wake', { ttl: LONG_TTL });
    let granted = false;
    const waiting = waiter.acquire('wake', { ttl: 10_000, waitTimeout: 15_000 }).then((lock) => {
      granted = true;
      return lock;
    });
    await sleep(300); // let the waiter start waiting
    expect(granted).toBe(false);

    const releasedAt = performance.now();
    await held.release();
    const lock = await waiting;
    expect(since(releasedAt)).toBeLessThan(5_000);
    expect(lock.fencingToken > held.fencingToken).toBe(true);
    await lock.release();
  });

  if (ctx.factory.fair) {
    it('grants 5 queued waiters in arrival order', async () => {
      const holder = ctx.service();
      const held = await holder.acquire('queue', { ttl: LONG_TTL });
      const order: number[] = [];
      const waiters: Promise<void>[] = [];
      for (let index = 0; index < 5; index++) {
        const locks = ctx.service();
        waiters.push(
          locks.acquire('queue', { ttl: 10_000, waitTimeout: 30_000 }).then(async (lock) => {
            order.push(index);
            await lock.release();
          }),
        );
        // Setup only: "is queued" has no public event, so give each waiter time to join before the next arrives.
        await sleep(250);
      }
      await held.release();
      await Promise.all(waiters);
      expect(order).toEqual([0, 1, 2, 3, 4]);
    });
  }

  it.each([
    ['the default waitTimeout', {}],
    ['waitTimeout 0', { waitTimeout: 0 }],
  ])(
    'acquire() with a signal already aborted, with %s, rejects with its reason and takes nothing',
    async (_, options) => {
      const locks = ctx.service();
      const controller = new AbortController();
      const reason = new Error('the caller gave up');
      controller.abort(reason);
      await expect(locks.acquire('cancelled-early', { ...options, signal: controller.signal })).rejects.toBe(reason);
      expect(await locks.isLocked('cancelled-early')).toBe(false);
      expect(locks.held()).toHaveLength(0);
    },
  );

  it('tryAcquire resolves null at once on a held key, even with a long default waitTimeout, and succeeds once it is free', async () => {
    const holder = ctx.service();
    const other = ctx.service({ defaults: { waitTimeout: 10_000 } });
    const held = await holder.acquire('busy', { ttl: 10_000 });
    const started = performance.now();
    expect(await other.tryAcquire('busy')).toBeNull();
    expect(since(started)).toBeLessThan(2_000);
    await held.release();
    const lock = await other.tryAcquire('busy', { ttl: 10_000 });
    expect(lock).not.toBeNull();
    expect(lock!.isHeld).toBe(true);
    await lock!.release();
  });

  it('run() holds the lock while fn runs, releases it in finally when fn throws, and rethrows the very same error', async () => {
    const locks = ctx.service();
    const observer = ctx.service();
    const failure = new Error('the work failed');
    let lockedInside: boolean | undefined;
    let handleInside: LockHandle | undefined;
    const run = locks.run(
      'job',
      async (lock) => {
        handleInside = lock;
        lockedInside = await observer.isLocked('job');
        throw failure;
      },
      { ttl: 10_000 },
    );
    await expect(run).rejects.toBe(failure);
    expect(lockedInside).toBe(true);
    expect(handleInside!.isHeld).toBe(false);
    expect(await observer.isLocked('job')).toBe(false);

    expect(await locks.run('job', async (lock) => (lock.isHeld ? 42 : -1), { ttl: 10_000 })).toBe(42);
    expect(await observer.isLocked('job')).toBe(false);
  });

  it('isLocked is false for a free key, true while anyone holds it, false again after release', async () => {
    const locks = ctx.service();
    const observer = ctx.service();
    expect(await observer.isLocked('flag')).toBe(false);
    const lock = await locks.acquire('flag', { ttl: 10_000 });
    expect(await observer.isLocked('flag')).toBe(true);
    expect(await locks.isLocked('flag')).toBe(true);
    await lock.release();
    expect(await observer.isLocked('flag')).toBe(false);
    // release() is idempotent.
    await expect(lock.release()).resolves.toBeUndefined();
  });
}
