/**
 * Holds many locks in its own process (forked by renewing.ts with --expose-gc) so the heap and event loop
 * figures belong to one library alone.
 */
import { sleep } from '../lib/clock';
import { fromParent, runWorker, toParent, workerPayload } from '../lib/fork';
import type { BenchEnv, LockAdapter } from '../peers/adapter';
import { adapterNamed } from '../peers/registry';

export interface RenewingWorkerPayload {
  readonly adapter: string;
  readonly env: BenchEnv;
  readonly locks: number;
  readonly ttl: number;
  /** Acquires and releases in flight at once. */
  readonly concurrency: number;
}

export type RenewingWorkerMessage =
  | {
      readonly type: 'held';
      readonly acquired: number;
      /** The first acquire error, if some acquires failed (the others are still measured). */
      readonly firstError?: string;
      readonly acquireMs: number;
    }
  | { readonly type: 'measure'; readonly windowMs: number }
  | {
      readonly type: 'measured';
      readonly elu: number;
      readonly cpuMsPerSecond: number;
      readonly lost: number;
      readonly heapPerLockBytes: number;
    }
  | { readonly type: 'release' }
  | { readonly type: 'done'; readonly releaseMs: number };

function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run the renewal worker with --expose-gc');
  // Twice: the first pass can leave objects whose finalizers free more.
  gc();
  gc();
}

async function inBatches(count: number, concurrency: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
}

runWorker(async () => {
  const payload = workerPayload<RenewingWorkerPayload>();
  const adapter: LockAdapter = await adapterNamed(payload.adapter).create(payload.env, {
    ttl: payload.ttl,
    renew: true,
  });
  const handles: unknown[] = new Array(payload.locks).fill(undefined);
  try {
    await adapter.release(await adapter.acquire('renew:warm'));
    collectGarbage();
    const baseline = process.memoryUsage().heapUsed;
    const acquireStart = performance.now();
    let firstError: string | undefined;
    await inBatches(payload.locks, payload.concurrency, async (index) => {
      try {
        handles[index] = await adapter.acquire(`renew:${index}`);
      } catch (error) {
        firstError ??= error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      }
    });
    const acquireMs = performance.now() - acquireStart;
    const held = handles.filter((handle) => handle !== undefined);
    await toParent({ type: 'held', acquired: held.length, firstError, acquireMs });

    const { windowMs } = await fromParent<Extract<RenewingWorkerMessage, { type: 'measure' }>>('measure');
    const elu = performance.eventLoopUtilization();
    const cpu = process.cpuUsage();
    await sleep(windowMs);
    const busy = performance.eventLoopUtilization(elu);
    const used = process.cpuUsage(cpu);
    const lost = adapter.isLost ? held.filter((handle) => adapter.isLost!(handle)).length : 0;
    // Steady state: after several renewals every lock carries whatever its renewals keep alive.
    collectGarbage();
    await toParent({
      type: 'measured',
      elu: busy.utilization,
      cpuMsPerSecond: (used.user + used.system) / 1000 / (windowMs / 1000),
      lost,
      heapPerLockBytes: (process.memoryUsage().heapUsed - baseline) / Math.max(1, held.length),
    });

    await fromParent('release');
    const releaseStart = performance.now();
    await inBatches(held.length, payload.concurrency, async (index) => {
      await adapter.release(held[index]).catch(() => undefined);
    });
    await toParent({ type: 'done', releaseMs: performance.now() - releaseStart });
  } finally {
    await adapter.close();
  }
});
