/**
 * A lock client in its own OS process, forked by test/workers/spawn-worker.ts (with ts-register.js, outside Jest).
 * Reads its WorkerConfig from the environment and reports over IPC; see worker-protocol.ts for the modes.
 */
import { firstValueFrom } from 'rxjs';
import { LockTimeoutError } from '../../lib/errors';
import { LockService } from '../../lib/lock.service';
import { BackendUnderTest, connectBackend } from '../support/backends';
import { fromParent, leave, reportIfStillAlive, runWorker, stayAlive, toParent, workerConfig } from '../support/worker';
import { runIncrements } from './increment-loop';
import { ParentMessage, WORKER_CONFIG_ENV, WorkerConfig, WorkerMessage } from './worker-protocol';

const send = (message: WorkerMessage) => toParent(message);
const nextParentMessage = (type: ParentMessage['type']) => fromParent<ParentMessage>(type);

function check(condition: unknown, what: string): void {
  if (!condition) throw new Error(`lifecycle check failed: ${what}`);
}

async function increment(config: WorkerConfig): Promise<void> {
  const connection = connectBackend(config.backend, config.address);
  const locks = new LockService(connection.backend, { keyPrefix: config.keyPrefix });
  // A round trip, so "ready" means connected, and all workers then start contending together.
  await locks.isLocked(config.key);
  await send({ type: 'ready' });
  await nextParentMessage('go');
  const sections = await runIncrements(locks, {
    worker: config.worker,
    key: config.key,
    iterations: config.iterations ?? 1,
    ttl: config.ttl,
    waitTimeout: config.waitTimeout ?? 30_000,
    counterFile: config.counterFile!,
    pauseMs: config.pauseMs ?? 2,
  });
  await locks.close();
  await connection.close();
  await send({ type: 'done', sections });
  leave();
}

async function hold(config: WorkerConfig): Promise<void> {
  const connection = connectBackend(config.backend, config.address);
  const locks = new LockService(connection.backend, { keyPrefix: config.keyPrefix });
  const requestedAt = performance.timeOrigin + performance.now();
  const lock = await locks.acquire(config.key, {
    ttl: config.ttl,
    lockDelay: config.lockDelay,
    waitTimeout: config.waitTimeout ?? 30_000,
  });
  await send({
    type: 'held',
    fencingToken: lock.fencingToken.toString(),
    token: lock.token,
    expiresAt: lock.expiresAt,
    requestedAt,
  });
  // The keep-alive stays: the process (and the watchdog) runs until the parent kills it.
}

/** Uses every long-lived resource the library has, closes, and leaves it to the process to exit on its own. */
async function lifecycle(config: WorkerConfig): Promise<void> {
  const first = connectBackend(config.backend, config.address);
  // Memory locks are only shared within one backend instance.
  const second: BackendUnderTest = config.backend === 'memory' ? first : connectBackend(config.backend, config.address);
  const a = new LockService(first.backend, { keyPrefix: config.keyPrefix });
  const b = new LockService(second.backend, { keyPrefix: config.keyPrefix });
  const { key, ttl } = config;

  const held = await a.acquire(key, { ttl, waitTimeout: 5_000 });
  const renewal = await firstValueFrom(held.renewals$);
  check(renewal.type === 'renewed', `the watchdog renewed (got ${renewal.type})`);
  check((await b.tryAcquire(key, { ttl })) === null, 'tryAcquire on a held key resolves null');
  const timedOut = await b.acquire(key, { ttl, waitTimeout: 300 }).then(
    () => 'granted',
    (error: unknown) => (error instanceof LockTimeoutError ? 'timeout' : String(error)),
  );
  check(timedOut === 'timeout', `a waiter times out with LockTimeoutError (got ${timedOut})`);
  check((await a.run(`${key}:run`, async () => 'ran', { ttl })) === 'ran', 'run returns the result');
  await a.acquire(`${key}:left-open`, { ttl, waitTimeout: 5_000 }); // released by a.close()

  const waiter = b.acquire(key, { ttl, waitTimeout: 10_000 });
  await held.release();
  const next = await waiter;
  check(next.fencingToken > held.fencingToken, 'the next holder gets a higher fencing token');

  await a.close();
  await b.close(); // releases `next`
  await first.close();
  if (second !== first) await second.close();
  await send({ type: 'done', summary: { fencingToken: next.fencingToken.toString() } });
  leave();
  reportIfStillAlive(4_000);
}

// Left (leave()) before the final checks, so that what remains is only what the library left open.
stayAlive();

async function main(): Promise<void> {
  const config = workerConfig<WorkerConfig>(WORKER_CONFIG_ENV);
  switch (config.mode) {
    case 'increment':
      return increment(config);
    case 'hold':
      return hold(config);
    case 'lifecycle':
      return lifecycle(config);
  }
}

runWorker(main);
