import type { ContractContext } from '../../contract/contract-context';
import { holdPermit, maxOverlap } from '../intervals';
import type { Interval } from '../kinds-worker-protocol';
import { spawnKindsWorker } from '../kinds-workers';

const PERMITS = 3;
const CONTENDERS = 20;
const PROCESSES = 5;
const HOLD_MS = 250;
const WAIT = 60_000;

export function semaphoreCases(ctx: ContractContext): void {
  const where = ctx.factory.crossProcess
    ? `${PROCESSES} OS processes x ${CONTENDERS / PROCESSES} connections`
    : 'one process (memory is in-process only)';

  it(`lets exactly ${PERMITS} of ${CONTENDERS} contenders in at once (${where}), and every one completes`, async () => {
    const intervals = ctx.factory.crossProcess ? await inWorkers(ctx) : await inProcess(ctx);
    expect(intervals).toHaveLength(CONTENDERS);
    expect(maxOverlap(intervals)).toBe(PERMITS);
    expect(new Set(intervals.map((interval) => interval.fencingToken)).size).toBe(CONTENDERS);
  });

  it('keeps a semaphore apart from the lock of the same name', async () => {
    const [a, b] = [ctx.service(), ctx.service()];
    const permit = await a.acquire('jobs', { permits: 1, ttl: ctx.ttl });
    expect(await b.tryAcquire('jobs', { permits: 1, ttl: ctx.ttl })).toBeNull();
    expect(await b.isLocked('jobs')).toBe(false);
    const exclusive = await b.acquire('jobs', { ttl: ctx.ttl, waitTimeout: 0 });
    const reader = await a.tryAcquire('other', { mode: 'read', ttl: ctx.ttl });
    expect(reader).not.toBeNull();
    await Promise.all([permit.release(), exclusive.release(), reader!.release()]);
  });

  it('hands a released permit to a waiter, and a full semaphore times a waiter out', async () => {
    const services = [ctx.service(), ctx.service(), ctx.service()];
    const held = await Promise.all(
      services.slice(0, 2).map((locks) => locks.acquire('pool', { permits: 2, ttl: ctx.ttl })),
    );
    await expect(services[2].acquire('pool', { permits: 2, ttl: ctx.ttl, waitTimeout: 300 })).rejects.toThrow(/pool/);
    const waiting = services[2].acquire('pool', { permits: 2, ttl: ctx.ttl, waitTimeout: WAIT });
    await held[1].release();
    const third = await waiting;
    expect(third.permits).toBe(2);
    await Promise.all([held[0].release(), third.release()]);
  });
}

async function inWorkers(ctx: ContractContext): Promise<Interval[]> {
  const workers = Array.from({ length: PROCESSES }, (_, worker) =>
    spawnKindsWorker({
      task: 'semaphore',
      worker,
      backend: ctx.factory.name,
      address: ctx.factory.address(),
      keyPrefix: ctx.ns,
      key: 'sem',
      ttl: 10_000,
      waitTimeout: WAIT,
      permits: PERMITS,
      contenders: CONTENDERS / PROCESSES,
      holdMs: HOLD_MS,
    }),
  );
  await Promise.all(workers.map((worker) => worker.message('ready', 60_000)));
  for (const worker of workers) worker.send({ type: 'go' });
  const reports = await Promise.all(workers.map((worker) => worker.message('done', 120_000)));
  return reports.flatMap((report) => report.intervals);
}

function inProcess(ctx: ContractContext): Promise<Interval[]> {
  return Promise.all(
    Array.from({ length: CONTENDERS }, () =>
      holdPermit(ctx.service(), 'sem', { permits: PERMITS, ttl: 10_000, waitTimeout: WAIT }, HOLD_MS),
    ),
  );
}
