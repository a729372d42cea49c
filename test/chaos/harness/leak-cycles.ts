import { performance } from 'node:perf_hooks';
import { LockBackendError, LockTimeoutError } from '../../../lib/errors';
import { LockService } from '../../../lib/lock.service';
import type { BackendUnderTest } from '../../support/backends';
import { connectChaosBackend } from './backends';
import type { ChaosWorkerConfig, LeakReport, LeakTask } from './worker-protocol';

const KEYS = 50;

/**
 * The leak scenario's workload, in a worker started with --expose-gc: plain acquire/release cycles over 50
 * keys, and mixed in, what allocates waiter-side resources: a contended acquire that waits (a subscription or
 * a watch), a wait that times out, a tryAcquire miss and a run(). Two services on two connections, like two
 * app instances. Then both close, and the report says what is still open.
 */
export async function runLeakCycles(config: ChaosWorkerConfig, task: LeakTask): Promise<LeakReport> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('the leak worker needs --expose-gc');
  const baseline = process.getActiveResourcesInfo();
  const started = performance.now();

  const first = connectChaosBackend(config.backend, config.address);
  // Memory locks are only shared within one backend instance.
  const second: BackendUnderTest =
    config.backend === 'memory' ? first : connectChaosBackend(config.backend, config.address);
  const a = new LockService(first.backend, { keyPrefix: config.keyPrefix });
  const b = new LockService(second.backend, { keyPrefix: config.keyPrefix });
  const ttl = task.ttl;
  const warmup = Math.min(1_000, Math.floor(task.cycles / 5));
  let heapAfterWarmup = 0;

  for (let cycle = 0; cycle < task.cycles; cycle++) {
    if (cycle === warmup) heapAfterWarmup = measureHeap(gc);
    const lock = await a.acquire(`k${cycle % KEYS}`, { ttl, waitTimeout: 5_000 });
    await lock.release();
    if (cycle % 10 === 5) {
      const holder = await a.acquire('contended', { ttl, waitTimeout: 5_000 });
      const waiting = b.acquire('contended', { ttl, waitTimeout: 10_000 });
      // Let the waiter subscribe or start watching before the release.
      await new Promise((resolve) => setTimeout(resolve, 2));
      await holder.release();
      await (await waiting).release();
    }
    if (cycle % 25 === 7) {
      const holder = await a.acquire('busy', { ttl, waitTimeout: 5_000 });
      if ((await b.tryAcquire('busy', { ttl })) !== null) throw new Error('tryAcquire got a held key');
      await holder.release();
    }
    if (cycle % 100 === 11) {
      const holder = await a.acquire('timeout', { ttl, waitTimeout: 5_000 });
      const outcome = await b.acquire('timeout', { ttl, waitTimeout: 200 }).then(
        (lock) => lock,
        (error: unknown) => error,
      );
      // On a loaded machine the first answer may itself take longer than the wait: that is a LockBackendError.
      if (!(outcome instanceof LockTimeoutError || outcome instanceof LockBackendError)) {
        throw new Error(`expected the wait to time out, got ${String(outcome)}`);
      }
      await holder.release();
    }
    if (cycle % 100 === 13) await a.run('run', async () => undefined, { ttl });
  }
  const heapAtEnd = measureHeap(gc);
  const heldAfterClose = a.heldCount + b.heldCount;

  await a.close();
  await b.close();
  await first.close();
  if (second !== first) await second.close();
  // Sockets finish closing on the next turns of the loop.
  await new Promise((resolve) => setTimeout(resolve, 500));
  return {
    cycles: task.cycles,
    heapAfterWarmup,
    heapAtEnd,
    resourcesAfterClose: difference(process.getActiveResourcesInfo(), baseline),
    heldAfterClose,
    durationMs: performance.now() - started,
  };
}

function measureHeap(gc: () => void): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** `after` minus `before`, as multisets. */
function difference(after: string[], before: string[]): string[] {
  const remaining = [...before];
  return after.filter((item) => {
    const index = remaining.indexOf(item);
    if (index < 0) return true;
    remaining.splice(index, 1);
    return false;
  });
}
