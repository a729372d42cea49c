import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { spawnWorker } from '../../workers/spawn-worker';
import type { ContractContext } from '../contract-context';

const HOLDER_TTL = 3_000;
/** Slack on top of the ttl for a loaded two-core machine: a waiter re-checks at the latest when the ttl ends. */
const MARGIN = 5_000;

export function crashCases(ctx: ContractContext): void {
  if (ctx.factory.crossProcess) {
    it(`a SIGKILLed holder process frees the lock within its ttl (${HOLDER_TTL} ms) without any cleanup`, async () => {
      const holder = spawnWorker({
        mode: 'hold',
        worker: 0,
        backend: ctx.factory.name,
        address: ctx.factory.address(),
        keyPrefix: ctx.ns,
        key: 'crash',
        ttl: HOLDER_TTL,
      });
      const held = await holder.message('held', 40_000);
      await holder.kill('SIGKILL');
      const killedAt = performance.now();

      const locks = ctx.service();
      // The dead holder's last renewal left it most of a ttl: the key is still taken right after the crash.
      expect(await locks.tryAcquire('crash', { ttl: 10_000 })).toBeNull();
      const lock = await locks.acquire('crash', { ttl: 10_000, waitTimeout: HOLDER_TTL + MARGIN });
      expect(performance.now() - killedAt).toBeLessThan(HOLDER_TTL + MARGIN);
      expect(lock.fencingToken > BigInt(held.fencingToken)).toBe(true);
      await lock.release();
    });
  } else {
    it(`an abandoned lock (holder gone without release; in-process for memory) frees within its ttl (${HOLDER_TTL} ms)`, async () => {
      const abandoned = ctx.connect().backend;
      const grant = await abandoned.tryAcquire({
        namespace: ctx.ns,
        key: 'crash',
        token: randomUUID(),
        ttl: HOLDER_TTL,
      });
      expect(grant).not.toBeNull();
      const abandonedAt = performance.now();

      const locks = ctx.service();
      expect(await locks.tryAcquire('crash', { ttl: 10_000 })).toBeNull();
      const lock = await locks.acquire('crash', { ttl: 10_000, waitTimeout: HOLDER_TTL + MARGIN });
      expect(performance.now() - abandonedAt).toBeLessThan(HOLDER_TTL + MARGIN);
      expect(performance.now()).toBeGreaterThanOrEqual(grant!.validUntil);
      expect(lock.fencingToken > grant!.fencingToken).toBe(true);
      await lock.release();
    });
  }
}
