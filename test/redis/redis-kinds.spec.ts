import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { redisLockKeys, redisSemaphoreKeys } from '../../lib/backends/redis/redis-keys';
import { RedisLockBackend, type RedisLockBackendTuning } from '../../lib/backends/redis/redis-lock.backend';
import { LockService } from '../../lib/lock.service';
import { uniqueNamespace } from '../support/backends';
import { sleep } from '../support/time';
import type { KindsSection } from './kinds-worker-protocol';
import { killAllWorkers } from '../support/worker';
import { forkKindsWorker } from './kinds-workers';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { eventually } from './redis-spec-helpers';

/** Slack for a loaded two-core machine on top of a ttl: a waiter re-checks at the latest when the ttl ends. */
const MARGIN = 5_000;

/** Most sections open at the same instant (ends sort before starts at equal times, so touching is not overlapping). */
function maxOverlap(sections: readonly KindsSection[]): number {
  const events = sections.flatMap((section) => [
    { at: BigInt(section.start), delta: 1 },
    { at: BigInt(section.end), delta: -1 },
  ]);
  events.sort((a, b) => (a.at === b.at ? a.delta - b.delta : a.at < b.at ? -1 : 1));
  let inside = 0;
  let most = 0;
  for (const event of events) {
    inside += event.delta;
    most = Math.max(most, inside);
  }
  return most;
}

describe('Redis read/write locks and semaphores', () => {
  let server: TestRedisServer;
  let admin: Redis;
  let ns: string;
  const opened: { locks: LockService; client: Redis }[] = [];

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
  });

  afterAll(async () => {
    await admin?.quit();
    await server?.stop();
  });

  beforeEach(() => {
    ns = uniqueNamespace('kinds');
  });

  afterEach(async () => {
    await killAllWorkers();
    for (const { locks, client } of opened.splice(0)) {
      await locks.close();
      await client.quit();
    }
  });

  /** A LockService on its own connection, like another app instance. */
  function service(tuning: RedisLockBackendTuning = {}): LockService {
    const client = new Redis(server.url);
    const locks = new LockService(new RedisLockBackend({ client, ...tuning }), { keyPrefix: ns });
    opened.push({ locks, client });
    return locks;
  }

  describe('read/write locks', () => {
    it('lets 5 readers hold at once, each renewed by its own watchdog with its own fencing token', async () => {
      const readers = await Promise.all(
        [1, 2, 3, 4, 5].map(() => service().acquire('doc', { mode: 'read', ttl: 1_500, waitTimeout: 0 })),
      );
      expect(readers.every((reader) => reader.isHeld && reader.mode === 'read')).toBe(true);
      expect(await admin.zcard(redisLockKeys(ns, 'doc').readers)).toBe(5);
      expect(new Set(readers.map((reader) => reader.fencingToken)).size).toBe(5);
      // Each reader's own watchdog renews it (ttl 1.5 s: a renewal within ~0.5 s).
      const renewals = await Promise.all(readers.map((reader) => firstValueFrom(reader.renewals$)));
      expect(renewals.every((renewal) => renewal.type === 'renewed')).toBe(true);
      expect(await service().isLocked('doc')).toBe(true);

      await Promise.all(readers.map((reader) => reader.release()));
      expect(await admin.exists(redisLockKeys(ns, 'doc').readers)).toBe(0);
      expect(await service().isLocked('doc')).toBe(false);
    });

    it('treats exclusive and write as one lock that excludes readers, and readers exclude both', async () => {
      const locks = service();
      const other = service();
      for (const mode of ['exclusive', 'write'] as const) {
        const holder = await locks.acquire('doc', { mode, waitTimeout: 0 });
        expect(await other.tryAcquire('doc', { mode: 'read' })).toBeNull();
        expect(await other.tryAcquire('doc', { mode: 'write' })).toBeNull();
        expect(await other.tryAcquire('doc', { mode: 'exclusive' })).toBeNull();
        await holder.release();
      }
      const reader = await locks.acquire('doc', { mode: 'read', waitTimeout: 0 });
      expect(await other.tryAcquire('doc', { mode: 'write' })).toBeNull();
      expect(await other.tryAcquire('doc')).toBeNull();
      const second = await other.tryAcquire('doc', { mode: 'read' });
      expect(second).not.toBeNull();
      await Promise.all([reader.release(), second!.release()]);
    });

    it('makes a writer wait for every reader, then wakes it when the last one leaves', async () => {
      const readers = [service(), service()];
      const [first, second] = await Promise.all(
        readers.map((locks) => locks.acquire('doc', { mode: 'read', ttl: 20_000 })),
      );
      // Only a release message can wake the writer within the bound below. A writer's intent (not a FIFO
      // entry, see redis-fair.spec.ts) is what holds new readers back with fairness 'none'.
      const writerLocks = service({ recheckInterval: 30_000, fairness: 'none' });
      let granted = false;
      const writer = writerLocks
        .acquire('doc', { mode: 'write', waitTimeout: 20_000 })
        .then((lock) => ((granted = true), lock));
      await eventually(async () => (await admin.zcard(redisLockKeys(ns, 'doc').writersWaiting)) === 1);

      await first.release();
      await service().isLocked('doc'); // a round trip after the release
      expect(granted).toBe(false); // safety, not timing: a reader still holds
      const releasedAt = performance.now();
      await second.release();
      const lock = await writer;
      expect(performance.now() - releasedAt).toBeLessThan(MARGIN);
      expect(lock.fencingToken).toBeGreaterThan(second.fencingToken);
      // Its intent is gone with the grant.
      expect(await admin.exists(redisLockKeys(ns, 'doc').writersWaiting)).toBe(0);
      await lock.release();
    });

    it('does not starve a writer under a continuous stream of overlapping readers', async () => {
      const readerLocks = service();
      const writerLocks = service();
      let stop = false;
      let readersInside = 0;
      let writerInside = false;
      const overlaps: string[] = [];
      let grantedAfterWriter = 0;
      let writerDone = false;
      const stream = (async () => {
        const running: Promise<unknown>[] = [];
        while (!stop) {
          running.push(
            readerLocks.run(
              'doc',
              async () => {
                readersInside += 1;
                if (writerInside) overlaps.push('a reader entered while the writer held the lock');
                if (writerDone) grantedAfterWriter += 1;
                await sleep(150);
                readersInside -= 1;
              },
              { mode: 'read', ttl: 5_000, waitTimeout: 30_000 },
            ),
          );
          await sleep(30); // a new reader every 30 ms, each holding 150 ms: never a moment without one
        }
        await Promise.all(running);
      })();
      await eventually(async () => readersInside >= 3);

      const requestedAt = performance.now();
      const writer = await writerLocks.acquire('doc', { mode: 'write', ttl: 5_000, waitTimeout: 15_000 });
      const waited = performance.now() - requestedAt;
      writerInside = true;
      expect(readersInside).toBe(0);
      await sleep(100);
      writerInside = false;
      writerDone = true;
      await writer.release();
      await eventually(async () => grantedAfterWriter >= 3);
      stop = true;
      await stream;

      expect(overlaps).toEqual([]);
      // Readers inside when it asked hold 150 ms each; new ones wait behind its intent.
      expect(waited).toBeLessThan(MARGIN);
    });

    it.each(['read', 'write'] as const)('frees a SIGKILLed %s holder’s lock within its ttl', async (mode) => {
      const ttl = 2_000;
      const holder = forkKindsWorker({ role: 'hold', redisUrl: server.url, keyPrefix: ns, key: 'crash', mode, ttl });
      const held = await holder.message('held');
      await holder.kill();
      const killedAt = performance.now();

      const other = mode === 'read' ? 'write' : 'read';
      const locks = service();
      expect(await locks.tryAcquire('crash', { mode: other })).toBeNull();
      const lock = await locks.acquire('crash', { mode: other, ttl: 10_000, waitTimeout: ttl + MARGIN });
      expect(performance.now() - killedAt).toBeLessThan(ttl + MARGIN);
      expect(lock.fencingToken).toBeGreaterThan(BigInt(held.fencingToken));
      await lock.release();
    });
  });

  describe('semaphores', () => {
    it('with N=3 and 20 contenders in 4 processes: at most 3 inside at once, exactly 3 at the peak, all work done', async () => {
      const workers = [0, 1, 2, 3].map(() =>
        forkKindsWorker({
          role: 'contend',
          redisUrl: server.url,
          keyPrefix: ns,
          key: 'exports',
          permits: 3,
          ttl: 5_000,
          waitTimeout: 60_000,
          contenders: 5,
          holdMs: 200,
        }),
      );
      await Promise.all(workers.map((worker) => worker.message('ready')));
      workers.forEach((worker) => worker.send({ type: 'go' }));
      const reports = await Promise.all(workers.map((worker) => worker.message('done', 90_000)));
      const sections = reports.flatMap((report) => report.sections);

      expect(sections).toHaveLength(20);
      expect(maxOverlap(sections)).toBe(3);
      expect(new Set(sections.map((section) => section.fencingToken)).size).toBe(20);
      expect(await admin.exists(redisSemaphoreKeys(ns, 'exports').holders)).toBe(0);
    });

    it('frees a SIGKILLed holder’s permit after its ttl', async () => {
      const ttl = 2_000;
      const holder = forkKindsWorker({
        role: 'hold',
        redisUrl: server.url,
        keyPrefix: ns,
        key: 'pool',
        permits: 2,
        ttl,
      });
      await holder.message('held');
      const locks = service();
      const mine = await locks.acquire('pool', { permits: 2, waitTimeout: 0 });
      await holder.kill();
      const killedAt = performance.now();

      expect(await locks.tryAcquire('pool', { permits: 2 })).toBeNull();
      const third = await locks.acquire('pool', { permits: 2, ttl: 10_000, waitTimeout: ttl + MARGIN });
      expect(performance.now() - killedAt).toBeLessThan(ttl + MARGIN);
      await Promise.all([mine.release(), third.release()]);
    });

    it('lives apart from the lock of the same name, and shares its fencing counter', async () => {
      const locks = service();
      const permit = await locks.acquire('report', { permits: 1, waitTimeout: 0 });
      const exclusive = await locks.acquire('report', { waitTimeout: 0 });
      expect(exclusive.fencingToken).toBeGreaterThan(permit.fencingToken);
      expect(await locks.tryAcquire('report', { permits: 1 })).toBeNull();
      expect(await locks.tryAcquire('report')).toBeNull();
      await permit.release();
      // isLocked is about the lock, not the semaphore.
      expect(await locks.isLocked('report')).toBe(true);
      await exclusive.release();
      expect(await locks.isLocked('report')).toBe(false);
    });

    it('wakes a waiter when a permit is returned', async () => {
      const holderLocks = service();
      const held = await Promise.all([1, 2].map(() => holderLocks.acquire('slots', { permits: 2, ttl: 20_000 })));
      const waiter = service({ recheckInterval: 30_000 }).acquire('slots', { permits: 2, waitTimeout: 20_000 });
      await sleep(200); // let it start waiting
      const releasedAt = performance.now();
      await held[0].release();
      const granted = await waiter;
      expect(performance.now() - releasedAt).toBeLessThan(MARGIN);
      await Promise.all([held[1].release(), granted.release()]);
    });
  });

  describe('on the backend', () => {
    let client: Redis;
    let backend: RedisLockBackend;

    beforeEach(() => {
      client = new Redis(server.url);
      backend = new RedisLockBackend({ client });
    });

    afterEach(async () => {
      await backend.close();
      await client.quit();
    });

    const request = (mode: 'read' | 'write' | undefined, permits?: number, ttl = 10_000) => ({
      namespace: ns,
      key: `k-${mode}-${permits}`,
      token: randomUUID(),
      ttl,
      mode,
      ...(permits !== undefined && { permits }),
    });

    it('extendMany renews writers, readers and permits in one pipeline', async () => {
      const requests = [request('write'), request('read'), request(undefined, 2)];
      const grants = await Promise.all(requests.map((r) => backend.tryAcquire(r)));
      const pipelines = jest.spyOn(client, 'pipeline');
      const results = await backend.extendMany(
        requests.map((r, i) => ({ lock: { ...r, fencingToken: grants[i]!.fencingToken }, ttl: 60_000 })),
      );
      expect(pipelines).toHaveBeenCalledTimes(1);
      pipelines.mockRestore();
      expect(results.every((result) => typeof result === 'number')).toBe(true);
      expect(await admin.pttl(redisLockKeys(ns, requests[0].key).lock)).toBeGreaterThan(30_000);
      const readerExpiry = Number(await admin.zscore(redisLockKeys(ns, requests[1].key).readers, requests[1].token));
      expect(readerExpiry).toBeGreaterThan(Date.now() + 30_000);
      expect(await admin.pttl(redisSemaphoreKeys(ns, requests[2].key).holders)).toBeGreaterThan(30_000);
    });

    it('a reader or permit whose ttl ran out no longer counts, and cannot be extended or released', async () => {
      for (const r of [request('read', undefined, 200), request(undefined, 1, 200)]) {
        const grant = await backend.tryAcquire(r);
        expect(grant).not.toBeNull();
        const lock = { ...r, fencingToken: grant!.fencingToken };
        await eventually(
          async () =>
            (await backend.tryAcquire({ ...r, mode: r.permits ? undefined : 'write', token: randomUUID() })) !== null,
        );
        expect(await backend.extend(lock, 10_000)).toBeNull();
        expect(await backend.release(lock)).toBe(false);
      }
    });
  });
});
