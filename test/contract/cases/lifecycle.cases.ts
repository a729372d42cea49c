import { spawnWorker } from '../../workers/spawn-worker';
import type { ContractContext } from '../contract-context';

export function lifecycleCases(ctx: ContractContext): void {
  it('after close() nothing stays open: a process that acquired, renewed, waited, timed out and closed exits by itself', async () => {
    const worker = spawnWorker({
      mode: 'lifecycle',
      worker: 0,
      backend: ctx.factory.name,
      address: ctx.factory.address(),
      keyPrefix: ctx.ns,
      key: 'lifecycle',
      ttl: ctx.ttl,
    });
    await worker.message('done', 45_000);
    const exited = await worker.exitsWithin(10_000);
    if (!exited)
      throw new Error(`the worker was still running 10 s after closing everything. Output:\n${worker.output}`);
    expect((await worker.exited).code).toBe(0);
  });
}
