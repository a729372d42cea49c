import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { lastValueFrom } from 'rxjs';
import type { AcquireRequest, HeldLock } from '../../../lib/backends/lock-backend.interface';
import { LockLostError } from '../../../lib/errors';
import { RecordingBackend } from '../../support/recording-backend';
import { outcome, within } from '../../support/time';
import { held } from '../../support/lock-requests';
import type { ContractContext } from '../contract-context';

export function ownershipCases(ctx: ContractContext): void {
  it('after the holder expired, the next holder waits out its validity, and the old owner can neither extend nor release it', async () => {
    const a = ctx.connect().backend;
    const b = ctx.connect().backend;
    const requestA = request(ctx, 'owned', ctx.ttl);
    const grantA = await a.tryAcquire(requestA);
    expect(grantA).not.toBeNull();
    const heldA = held(requestA, grantA!);

    // Nobody renews A (no LockService, no watchdog): it must expire by itself, and B's waiting acquire then wins.
    const requestB = request(ctx, 'owned', 30_000);
    const grantB = await b.acquire(requestB, AbortSignal.timeout(ctx.ttl + 15_000));
    const grantedAt = performance.now();
    const heldB = held(requestB, grantB);

    expect(grantedAt).toBeGreaterThanOrEqual(grantA!.validUntil);
    expect(grantB.fencingToken > grantA!.fencingToken).toBe(true);
    expect(await a.extend(heldA, 30_000)).toBeNull();
    expect(await a.release(heldA)).toBe(false);
    expect(await a.isLocked(ctx.ns, 'owned')).toBe(true);

    const extended = await b.extend(heldB, 30_000);
    expect(extended).not.toBeNull();
    expect(extended!).toBeGreaterThan(performance.now());
    expect(await b.release(heldB)).toBe(true);
    expect(await b.isLocked(ctx.ns, 'owned')).toBe(false);
    // A second release of the same lock is a no-op, not an error.
    expect(await b.release(heldB)).toBe(false);
  });

  const vanishings: { name: string; run(lock: HeldLock, recording: RecordingBackend): Promise<void> }[] = [
    {
      name: "the backend's own release by owner token",
      run: async (lock, recording) => expect(await recording.inner.release(lock)).toBe(true),
    },
    ...ctx.factory.vanishings,
  ];
  for (const vanishing of vanishings) {
    it(`a lock removed behind the holder's back (${vanishing.name}) errors renewals$ with LockLostError, aborts signal, and a later release() leaves the new holder alone`, async () => {
      const recording = new RecordingBackend(ctx.connect().backend);
      const holder = ctx.service({ backend: recording });
      const contender = ctx.service();
      const lock = await holder.acquire('lost', { ttl: ctx.ttl });
      const ended = outcome(lastValueFrom(lock.renewals$, { defaultValue: undefined }));

      await vanishing.run(recording.granted(lock.token), recording);
      const next = await contender.acquire('lost', { ttl: 30_000, waitTimeout: ctx.ttl + 5_000 });

      const { error } = await within(ended, ctx.ttl + 5_000, 'renewals$ erroring after the lock was removed');
      expect(error).toBeInstanceOf(LockLostError);
      expect((error as LockLostError).key).toBe('lost');
      expect(lock.signal.aborted).toBe(true);
      expect(lock.signal.reason).toBe(error);
      expect(lock.isHeld).toBe(false);

      await expect(lock.release()).resolves.toBeUndefined();
      expect(await contender.isLocked('lost')).toBe(true);
      await expect(next.extend()).resolves.toBeUndefined();
      expect(next.isHeld).toBe(true);
      expect(next.fencingToken > lock.fencingToken).toBe(true);
      await next.release();
      expect(await contender.isLocked('lost')).toBe(false);
    });
  }
}

function request(ctx: ContractContext, key: string, ttl: number): AcquireRequest {
  return { namespace: ctx.ns, key, token: randomUUID(), ttl };
}
