/**
 * A lock client in its own OS process for the kinds suite, forked by kinds-workers.ts with ts-register.js.
 * Reads its KindsWorkerConfig from the environment and reports over IPC.
 */
import { LockService } from '../../lib/lock.service';
import { connectBackend } from '../support/backends';
import { fromParent, leave, runWorker, stayAlive, toParent, workerConfig } from '../support/worker';
import { holdPermit } from './intervals';
import { KINDS_WORKER_ENV, KindsParentMessage, KindsWorkerConfig, KindsWorkerMessage } from './kinds-worker-protocol';

const send = (message: KindsWorkerMessage) => toParent(message);
const nextMessage = (type: KindsParentMessage['type']) => fromParent<KindsParentMessage>(type);

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

stayAlive();

async function main(): Promise<void> {
  const config = workerConfig<KindsWorkerConfig>(KINDS_WORKER_ENV);
  return config.task === 'hold' ? hold(config) : semaphore(config);
}

runWorker(main);
