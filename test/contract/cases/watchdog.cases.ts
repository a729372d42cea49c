import { LockLostError } from '../../../lib/errors';
import type { LockRenewal, LockRenewedEvent } from '../../../lib/lock-renewal';
import { sleep, within } from '../../support/time';
import type { ContractContext } from '../contract-context';

export function watchdogCases(ctx: ContractContext): void {
  it("the watchdog keeps an idle holder's lock for 3 ttls; renewals$ completes on release and the contender then gets it", async () => {
    const locks = ctx.service();
    const contender = ctx.service();
    const lock = await locks.acquire('dog', { ttl: ctx.ttl });
    const events: LockRenewal[] = [];
    const completed = new Promise<void>((resolve, reject) =>
      lock.renewals$.subscribe({ next: (event) => events.push(event), error: reject, complete: resolve }),
    );

    // Each pause outlasts a whole ttl: without renewals the lock would be gone by the first check.
    for (let round = 1; round <= 3; round++) {
      await sleep(ctx.ttl);
      expect(await contender.tryAcquire('dog', { ttl: ctx.ttl })).toBeNull();
      expect(lock.isHeld).toBe(true);
    }

    const renewed = events.filter((event): event is LockRenewedEvent => event.type === 'renewed');
    expect(renewed.length).toBeGreaterThanOrEqual(2);
    expect(renewed.map((event) => event.renewalCount)).toEqual(renewed.map((_, index) => index + 1));
    for (const event of renewed) {
      expect(event.key).toBe('dog');
      expect(event.fencingToken).toBe(lock.fencingToken);
      expect(event.ttl).toBe(ctx.ttl);
    }
    expect(renewed[renewed.length - 1].expiresAt).toBeGreaterThan(renewed[0].expiresAt);
    expect(lock.expiresAt).toBeGreaterThan(Date.now());

    await lock.release();
    await within(completed, 5_000, 'renewals$ completing after release()');
    expect(lock.isHeld).toBe(false);
    expect(lock.signal.aborted).toBe(false);
    const next = await contender.acquire('dog', { ttl: ctx.ttl, waitTimeout: 5_000 });
    expect(next.fencingToken > lock.fencingToken).toBe(true);
    await next.release();
  });

  it('maxHold: a holder that never releases is reported lost, and the key goes to a waiter without anyone releasing it', async () => {
    const locks = ctx.service();
    const contender = ctx.service();
    const maxHold = Math.round(ctx.ttl * 1.5);
    const lock = await locks.acquire('held-too-long', { ttl: ctx.ttl, maxHold });
    // Free at most one ttl after maxHold; the rest is room for a loaded machine.
    const next = await contender.acquire('held-too-long', { ttl: ctx.ttl, waitTimeout: maxHold + ctx.ttl + 15_000 });
    expect(lock.isHeld).toBe(false);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(next.fencingToken > lock.fencingToken).toBe(true);
    await next.release();
  }, 60_000);
}
