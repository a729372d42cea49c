import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runIncrements } from '../../workers/increment-loop';
import { spawnWorker } from '../../workers/spawn-worker';
import type { SectionReport } from '../../workers/worker-protocol';
import type { ContractContext } from '../contract-context';

const CONTENDERS = 4;
const ITERATIONS = 25;
const PAUSE_MS = 3;

export function mutualExclusionCases(ctx: ContractContext): void {
  const where = ctx.factory.crossProcess
    ? `${CONTENDERS} OS processes`
    : `${CONTENDERS} async loops in one process (memory is in-process only)`;

  it(`${where} x ${ITERATIONS} read-modify-writes never overlap, and fencing tokens follow the order of the critical sections`, async () => {
    const counterFile = join(ctx.tempDir(), 'counter');
    writeFileSync(counterFile, '0');
    const sections = ctx.factory.crossProcess ? await inWorkers(ctx, counterFile) : await inProcess(ctx, counterFile);

    expect(readFileSync(counterFile, 'utf8')).toBe(String(CONTENDERS * ITERATIONS));
    expect(sections).toHaveLength(CONTENDERS * ITERATIONS);
    const ordered = [...sections].sort((a, b) => compare(BigInt(a.start), BigInt(b.start)));
    for (let i = 1; i < ordered.length; i++) {
      const previous = ordered[i - 1];
      const current = ordered[i];
      if (BigInt(previous.end) >= BigInt(current.start)) {
        throw new Error(`critical sections overlap: ${JSON.stringify(previous)} and ${JSON.stringify(current)}`);
      }
      if (BigInt(previous.fencingToken) >= BigInt(current.fencingToken)) {
        throw new Error(
          `fencing token did not increase from ${JSON.stringify(previous)} to ${JSON.stringify(current)}`,
        );
      }
    }
    // Each holder read what the previous one wrote: no lost update.
    expect(ordered.map((section) => section.read)).toEqual(ordered.map((_, index) => index));
  });
}

async function inWorkers(ctx: ContractContext, counterFile: string): Promise<SectionReport[]> {
  const workers = Array.from({ length: CONTENDERS }, (_, worker) =>
    spawnWorker({
      mode: 'increment',
      worker,
      backend: ctx.factory.name,
      address: ctx.factory.address(),
      keyPrefix: ctx.ns,
      key: 'counter',
      ttl: 10_000,
      waitTimeout: 60_000,
      iterations: ITERATIONS,
      counterFile,
      pauseMs: PAUSE_MS,
    }),
  );
  await Promise.all(workers.map((worker) => worker.message('ready', 40_000)));
  for (const worker of workers) worker.send({ type: 'go' });
  const reports = await Promise.all(workers.map((worker) => worker.message('done', 90_000)));
  return reports.flatMap((report) => report.sections ?? []);
}

async function inProcess(ctx: ContractContext, counterFile: string): Promise<SectionReport[]> {
  const services = Array.from({ length: CONTENDERS }, () => ctx.service());
  const reports = await Promise.all(
    services.map((locks, worker) =>
      runIncrements(locks, {
        worker,
        key: 'counter',
        iterations: ITERATIONS,
        ttl: 10_000,
        waitTimeout: 60_000,
        counterFile,
        pauseMs: PAUSE_MS,
      }),
    ),
  );
  return reports.flat();
}

function compare(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
