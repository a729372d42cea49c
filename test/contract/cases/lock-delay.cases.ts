import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { LockNotSupportedError } from '../../../lib/errors';
import { LockOptions, MAX_LOCK_DELAY } from '../../../lib/lock-options';
import { spawnWorker } from '../../workers/spawn-worker';
import type { ContractContext } from '../contract-context';

const LOCK_DELAY = 1_500;
/** Slack on top of ttl + delay for a loaded two-core machine. */
const MARGIN = 5_000;
/** A holder's validity may end a few ms before the server's expiry (drift allowance); never more than this. */
const EARLY = 50;
/** Two processes' timeOrigin + now() readings of one wall clock can differ by rounding; never by this much. */
const CLOCK_SLACK = 25;

const BAD_DELAYS: [string, LockOptions][] = [
  ['-1', { lockDelay: -1 }],
  ['1.5', { lockDelay: 1.5 }],
  ["'1000' (a string)", { lockDelay: '1000' as unknown as number }],
  ['over an hour', { lockDelay: MAX_LOCK_DELAY + 1 }],
];

/**
 * Lock-delay (LockOptions.lockDelay): a holder lost without a release keeps the key from everyone for that
 * long after its validity; a release frees it at once. Backends without `supports.lockDelay` refuse it.
 */
export function lockDelayCases(ctx: ContractContext): void {
  it.each(BAD_DELAYS)(
    'rejects lockDelay %s with a TypeError that names it, before any server call',
    async (_, options) => {
      const locks = ctx.service();
      await expect(locks.acquire('delay-bad', options)).rejects.toThrow(TypeError);
      await expect(locks.acquire('delay-bad', options)).rejects.toThrow(/lockDelay/);
    },
  );

  it('lockDelay 0 (the default) is accepted everywhere', async () => {
    const lock = await ctx.service().acquire('delay-zero', { ttl: ctx.ttl, lockDelay: 0 });
    await lock.release();
  });

  if (!ctx.factory.lockDelay) {
    it('refuses a lockDelay with LockNotSupportedError, before any server call', async () => {
      const locks = ctx.service();
      const refused = locks.acquire('delay-refused', { ttl: ctx.ttl, lockDelay: LOCK_DELAY });
      await expect(refused).rejects.toThrow(LockNotSupportedError);
      await expect(locks.acquire('delay-refused', { lockDelay: LOCK_DELAY })).rejects.toThrow(/lockDelay/);
      expect(await locks.isLocked('delay-refused')).toBe(false);
    });
    return;
  }

  if (ctx.factory.crossProcess) {
    it(`a SIGKILLed holder process keeps the key blocked for ttl + lockDelay, then frees it`, async () => {
      const holder = spawnWorker({
        mode: 'hold',
        worker: 0,
        backend: ctx.factory.name,
        address: ctx.factory.address(),
        keyPrefix: ctx.ns,
        key: 'delay-crash',
        ttl: ctx.ttl,
        lockDelay: LOCK_DELAY,
      });
      const held = await holder.message('held', 40_000);
      await holder.kill('SIGKILL');

      const locks = ctx.service();
      const lock = await locks.acquire('delay-crash', { ttl: 10_000, waitTimeout: ctx.ttl + LOCK_DELAY + MARGIN });
      // The server set the expiry after the worker sent its acquire, so the key stays blocked at least this long
      // from then (both clocks are wall-clock based: CLOCK_SLACK covers their rounding).
      const blockedFor = performance.timeOrigin + performance.now() - held.requestedAt;
      expect(blockedFor).toBeGreaterThanOrEqual(ctx.ttl + LOCK_DELAY - CLOCK_SLACK);
      expect(lock.fencingToken > BigInt(held.fencingToken)).toBe(true);
      await lock.release();
    });
  }

  it(`keeps an abandoned lock's key from everyone for lockDelay (${LOCK_DELAY} ms) after its validity ended`, async () => {
    const abandoned = ctx.connect().backend;
    const sentAt = performance.now();
    const grant = await abandoned.tryAcquire({
      namespace: ctx.ns,
      key: 'delay-abandoned',
      token: randomUUID(),
      ttl: ctx.ttl,
      lockDelay: LOCK_DELAY,
    });
    expect(grant).not.toBeNull();

    const locks = ctx.service();
    // Past the holder's validity, the key is still taken: the delay has not run out.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, grant!.validUntil - performance.now()) + 100));
    expect(await locks.tryAcquire('delay-abandoned', { ttl: 10_000 })).toBeNull();
    expect(await locks.isLocked('delay-abandoned')).toBe(true);

    const lock = await locks.acquire('delay-abandoned', { ttl: 10_000, waitTimeout: ctx.ttl + LOCK_DELAY + MARGIN });
    const waited = performance.now() - sentAt;
    expect(waited).toBeGreaterThanOrEqual(ctx.ttl + LOCK_DELAY - EARLY);
    expect(waited).toBeLessThan(ctx.ttl + LOCK_DELAY + MARGIN);
    expect(lock.fencingToken > grant!.fencingToken).toBe(true);
    await lock.release();
  });

  it('a held lock that the watchdog stops renewing is reported lost at its ttl, and the delay runs from there', async () => {
    const locks = ctx.service();
    const lock = await locks.acquire('delay-lost', { ttl: ctx.ttl, lockDelay: LOCK_DELAY, maxHold: 1 });
    const lost = new Promise<number>((resolve) =>
      lock.signal.addEventListener('abort', () => resolve(performance.now()), { once: true }),
    );
    const lostAt = await lost;
    expect(lock.state).toBe('lost');

    const other = ctx.service();
    expect(await other.tryAcquire('delay-lost', { ttl: 10_000 })).toBeNull();
    const next = await other.acquire('delay-lost', { ttl: 10_000, waitTimeout: LOCK_DELAY + MARGIN });
    expect(performance.now() - lostAt).toBeGreaterThanOrEqual(LOCK_DELAY - EARLY);
    expect(next.fencingToken > lock.fencingToken).toBe(true);
    await next.release();
  });

  it('a release frees the key at once: the delay is only for holders lost without one', async () => {
    const locks = ctx.service();
    const lock = await locks.acquire('delay-released', { ttl: 10_000, lockDelay: 60_000 });
    await lock.release();
    const next = await ctx.service().tryAcquire('delay-released', { ttl: 10_000 });
    expect(next).not.toBeNull();
    await next!.release();
  });

  it('renewals keep the lock held past its first ttl with a delay set (the delay adds to the expiry only)', async () => {
    const locks = ctx.service();
    const lock = await locks.acquire('delay-renewed', { ttl: ctx.ttl, lockDelay: LOCK_DELAY });
    await new Promise((resolve) => setTimeout(resolve, ctx.ttl * 1.5));
    expect(lock.isHeld).toBe(true);
    expect(await ctx.service().tryAcquire('delay-renewed', { ttl: 10_000 })).toBeNull();
    await lock.release();
    expect(await locks.isLocked('delay-renewed')).toBe(false);
  });
}
