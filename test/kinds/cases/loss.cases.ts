import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { lastValueFrom } from 'rxjs';
import { LockLostError } from '../../../lib/errors';
import type { LockOptions } from '../../../lib/lock-options';
import type { ContractContext } from '../../contract/contract-context';
import { RecordingBackend } from '../../support/recording-backend';
import { outcome, within } from '../../support/time';
import { spawnKindsWorker } from '../kinds-workers';

/** Slack on top of a ttl for a loaded two-core machine. */
const MARGIN = 5_000;
const HOLDER_TTL = 3_000;

const KINDS: { name: string; options: LockOptions; successor: LockOptions }[] = [
  { name: 'read lock', options: { mode: 'read' }, successor: { mode: 'write' } },
  { name: 'write lock', options: { mode: 'write' }, successor: { mode: 'read' } },
  { name: 'semaphore permit', options: { permits: 1 }, successor: { permits: 1 } },
];

export function lossCases(ctx: ContractContext): void {
  for (const kind of KINDS) {
    it(`a ${kind.name} deleted behind its holder's back (backend.release with its token) errors renewals$ with LockLostError and aborts signal`, async () => {
      const recording = new RecordingBackend(ctx.connect().backend);
      const holder = ctx.service({ backend: recording });
      const lock = await holder.acquire('lost', { ...kind.options, ttl: ctx.ttl });
      const ended = outcome(lastValueFrom(lock.renewals$, { defaultValue: undefined }));

      expect(await recording.inner.release(recording.granted(lock.token))).toBe(true);
      const next = await ctx
        .service()
        .acquire('lost', { ...kind.successor, ttl: ctx.ttl, waitTimeout: ctx.ttl + MARGIN });

      const { error } = await within(ended, ctx.ttl + MARGIN, `renewals$ of the ${kind.name} erroring`);
      expect(error).toBeInstanceOf(LockLostError);
      expect(lock.signal.aborted).toBe(true);
      expect(lock.signal.reason).toBe(error);
      expect(lock.isHeld).toBe(false);
      // The lost handle's release leaves the new holder alone.
      await lock.release();
      await expect(next.extend()).resolves.toBeUndefined();
      expect(next.isHeld).toBe(true);
      await next.release();
    });

    if (ctx.factory.crossProcess) {
      it(`a SIGKILLed process holding a ${kind.name} frees it within its ttl (${HOLDER_TTL} ms)`, async () => {
        const holder = spawnKindsWorker({
          task: 'hold',
          worker: 0,
          backend: ctx.factory.name,
          address: ctx.factory.address(),
          keyPrefix: ctx.ns,
          key: 'crash',
          ttl: HOLDER_TTL,
          waitTimeout: 30_000,
          ...kind.options,
        });
        const held = await holder.message('held', 40_000);
        await holder.kill('SIGKILL');
        const killedAt = performance.now();

        const locks = ctx.service();
        expect(await locks.tryAcquire('crash', { ...kind.successor, ttl: 10_000 })).toBeNull();
        const lock = await locks.acquire('crash', { ...kind.successor, ttl: 10_000, waitTimeout: HOLDER_TTL + MARGIN });
        expect(performance.now() - killedAt).toBeLessThan(HOLDER_TTL + MARGIN);
        expect(lock.fencingToken).toBeGreaterThan(BigInt(held.fencingToken));
        await lock.release();
      });
    } else {
      it(`a ${kind.name} whose holder stopped renewing (in-process for memory: no watchdog) frees within its ttl (${HOLDER_TTL} ms)`, async () => {
        const abandoned = ctx.connect().backend;
        const grant = await abandoned.tryAcquire({
          namespace: ctx.ns,
          key: 'crash',
          token: randomUUID(),
          ttl: HOLDER_TTL,
          mode: kind.options.mode ?? 'exclusive',
          ...(kind.options.permits !== undefined && { permits: kind.options.permits }),
        });
        expect(grant).not.toBeNull();
        const abandonedAt = performance.now();

        const locks = ctx.service();
        expect(await locks.tryAcquire('crash', { ...kind.successor, ttl: 10_000 })).toBeNull();
        const lock = await locks.acquire('crash', { ...kind.successor, ttl: 10_000, waitTimeout: HOLDER_TTL + MARGIN });
        expect(performance.now() - abandonedAt).toBeLessThan(HOLDER_TTL + MARGIN);
        expect(performance.now()).toBeGreaterThanOrEqual(grant!.validUntil);
        expect(lock.fencingToken).toBeGreaterThan(grant!.fencingToken);
        await lock.release();
      });
    }
  }
}
