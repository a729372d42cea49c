/**
 * A lock client in its own OS process for the kinds suite, forked by kinds-workers.ts with ts-register.js.
 * Reads its KindsWorkerConfig from the environment and reports over IPC.
 */
import { LockService } from '../../lib/lock.service';
import { connectBackend } from '../support/backends';
import { holdPermit } from './intervals';
import { KINDS_WORKER_ENV, KindsParentMessage, KindsWorkerConfig, KindsWorkerMessage } from './kinds-worker-protocol';

function send(message: KindsWorkerMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!process.send) return reject(new Error('kinds-worker must be started with child_process.fork'));
    process.send(message, (error: Error | null) => (error ? reject(error) : resolve()));
  });
}

function nextMessage(type: KindsParentMessage['type']): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (message: KindsParentMessage) => {
      if (message?.type !== type) return;
      process.off('message', onMessage);
      resolve();
    };
    process.on('message', onMessage);
  });
}

async function hold(config: KindsWorkerConfig): Promise<void> {
  const locks = new LockService(connectBackend(config.backend, config.address).backend, {
    keyPrefix: config.keyPrefix,
  });
  const lock = await locks.acquire(config.key, {
    ttl: config.ttl,
    waitTimeout: config.waitTimeout,
    ...(config.mode && { mode: config.mode }),
    ...(config.permits !== undefined && { permits: config.permits }),
  });
  await send({ type: 'held', fencingToken: lock.fencingToken.toString() });
  // The watchdog keeps renewing until the parent kills this process.
}

async function semaphore(config: KindsWorkerConfig): Promise<void> {
  const connections = Array.from({ length: config.contenders ?? 1 }, () =>
    connectBackend(config.backend, config.address),
  );
  const services = connections.map(
    (connection) => new LockService(connection.backend, { keyPrefix: config.keyPrefix }),
  );
  // A round trip each, so "ready" means connected and every contender then starts together.
  await Promise.all(services.map((locks) => locks.isLocked(config.key)));
  await send({ type: 'ready' });
  await nextMessage('go');
  const intervals = await Promise.all(
    services.map((locks) =>
      holdPermit(
        locks,
        config.key,
        { permits: config.permits!, ttl: config.ttl, waitTimeout: config.waitTimeout },
        config.holdMs ?? 0,
      ),
    ),
  );
  await Promise.all(services.map((locks) => locks.close()));
  await Promise.all(connections.map((connection) => connection.close()));
  await send({ type: 'done', intervals });
  leave();
}

/** Library timers are unref'd; this keeps the worker alive while it works. */
const keepAlive = setInterval(() => undefined, 1_000);
let leaving = false;
process.on('disconnect', () => {
  if (!leaving) process.exit(2);
});

function leave(): void {
  leaving = true;
  clearInterval(keepAlive);
  process.disconnect();
}

async function main(): Promise<void> {
  const raw = process.env[KINDS_WORKER_ENV];
  if (!raw) throw new Error(`${KINDS_WORKER_ENV} is not set`);
  const config = JSON.parse(raw) as KindsWorkerConfig;
  return config.task === 'hold' ? hold(config) : semaphore(config);
}

main().catch(async (error: unknown) => {
  const failure = error instanceof Error ? `${error.name}: ${error.message}\n${error.stack ?? ''}` : String(error);
  await send({ type: 'error', message: failure }).catch(() => undefined);
  process.exit(1);
});
