/**
 * A lock client in its own OS process, forked by test/workers/spawn-worker.ts (with ts-register.js, outside Jest).
 * Reads its WorkerConfig from the environment and reports over IPC; see worker-protocol.ts for the modes.
 */
import { firstValueFrom } from 'rxjs';
import { LockTimeoutError } from '../../lib/errors';
import { LockService } from '../../lib/lock.service';
import { BackendUnderTest, connectBackend } from '../support/backends';
import { runIncrements } from './increment-loop';
import { ParentMessage, WORKER_CONFIG_ENV, WorkerConfig, WorkerMessage } from './worker-protocol';

function send(message: WorkerMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!process.send) return reject(new Error('lock-worker must be started with child_process.fork (no IPC channel)'));
    process.send(message, (error: Error | null) => (error ? reject(error) : resolve()));
  });
}

function nextParentMessage(type: ParentMessage['type']): Promise<ParentMessage> {
  return new Promise((resolve) => {
    const onMessage = (message: ParentMessage) => {
      if (message?.type !== type) return;
      process.off('message', onMessage);
      resolve(message);
    };
    process.on('message', onMessage);
  });
}

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
  finished();
}

async function hold(config: WorkerConfig): Promise<void> {
  const connection = connectBackend(config.backend, config.address);
  const locks = new LockService(connection.backend, { keyPrefix: config.keyPrefix });
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
  });
  // keepAlive stays: the process (and the watchdog) runs until the parent kills it.
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
  finished();
  // Unref'd: only fires if something else keeps the process alive, and then says what.
  setTimeout(() => {
    process.stderr.write(
      `still alive after close; active resources: ${JSON.stringify(process.getActiveResourcesInfo())}\n`,
    );
  }, 4_000).unref();
}

/**
 * The library's own timers are unref'd (they must never keep an app alive), and a child's IPC channel only
 * holds the process open while it has 'message' listeners; this keeps the worker alive while it works.
 * Cleared before the final checks, so that what remains is only what the library left open.
 */
const keepAlive = setInterval(() => undefined, 1_000);
let leaving = false;

// The parent test process died (even by SIGKILL, when its exit hook cannot run): do not linger as an orphan.
process.on('disconnect', () => {
  if (!leaving) process.exit(2);
});

function finished(): void {
  leaving = true;
  clearInterval(keepAlive);
  process.disconnect();
}

async function main(): Promise<void> {
  const raw = process.env[WORKER_CONFIG_ENV];
  if (!raw) throw new Error(`${WORKER_CONFIG_ENV} is not set`);
  const config = JSON.parse(raw) as WorkerConfig;
  switch (config.mode) {
    case 'increment':
      return increment(config);
    case 'hold':
      return hold(config);
    case 'lifecycle':
      return lifecycle(config);
  }
}

main().catch(async (error: unknown) => {
  const failure = error instanceof Error ? error : new Error(String(error));
  await send({ type: 'error', name: failure.name, message: failure.message, stack: failure.stack }).catch(
    () => undefined,
  );
  process.exit(1);
});
