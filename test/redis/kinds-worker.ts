/**
 * A lock client in its own OS process for the kinds and FIFO suites (forked by kinds-workers.ts with
 * test/support/ts-register.js). The shared test/workers/lock-worker.ts knows exclusive locks only; this one
 * takes a mode, permits and the backend's fairness.
 *   hold:    acquire once, report 'held', keep it (renewed) until the parent kills the process;
 *   turn:    on 'go', acquire once (it queues), hold `holdMs`, release, report its section;
 *   contend: on 'go', run `contenders` concurrent loops of acquire -> hold `holdMs` -> release, report sections.
 */
import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { LockService } from '../../lib/lock.service';
import { fromParent, leave, runWorker, stayAlive, toParent, workerConfig } from '../support/worker';
import {
  KINDS_WORKER_ENV,
  type KindsSection,
  type KindsWorkerConfig,
  type KindsWorkerMessage,
} from './kinds-worker-protocol';

const send = (message: KindsWorkerMessage) => toParent(message);

stayAlive();

async function main(): Promise<void> {
  const config = workerConfig<KindsWorkerConfig>(KINDS_WORKER_ENV);
  const client = new Redis(config.redisUrl);
  client.on('error', () => undefined);
  const backend = new RedisLockBackend({ client, fairness: config.fairness, waiterTtl: config.waiterTtl });
  const locks = new LockService(backend, { keyPrefix: config.keyPrefix });
  const options = {
    mode: config.mode,
    permits: config.permits,
    ttl: config.ttl,
    waitTimeout: config.waitTimeout ?? 60_000,
  };
  await locks.isLocked(config.key); // connected: 'ready' means ready to contend
  await send({ type: 'ready' });

  if (config.role === 'hold') {
    const lock = await locks.acquire(config.key, options);
    await send({ type: 'held', token: lock.token, fencingToken: lock.fencingToken.toString() });
    return; // held (and renewed) until the parent SIGKILLs us
  }

  await fromParent('go');
  const sections: KindsSection[] = [];
  await Promise.all(
    Array.from({ length: config.contenders ?? 1 }, async () => {
      const lock = await locks.acquire(config.key, options);
      const start = process.hrtime.bigint();
      if (config.role === 'turn')
        await send({ type: 'held', token: lock.token, fencingToken: lock.fencingToken.toString() });
      await new Promise((resolve) => setTimeout(resolve, config.holdMs ?? 50));
      const end = process.hrtime.bigint();
      sections.push({ start: start.toString(), end: end.toString(), fencingToken: lock.fencingToken.toString() });
      await lock.release();
    }),
  );
  await locks.close();
  await client.quit();
  await send({ type: 'done', sections });
  leave();
}

runWorker(main);
