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
import {
  KINDS_WORKER_ENV,
  type KindsSection,
  type KindsWorkerConfig,
  type KindsWorkerMessage,
} from './kinds-worker-protocol';

function send(message: KindsWorkerMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!process.send) return reject(new Error('kinds-worker must be forked (no IPC channel)'));
    process.send(message, (error: Error | null) => (error ? reject(error) : resolve()));
  });
}

// The library's timers are unref'd; this keeps the worker alive while it works. The parent going away ends it.
const keepAlive = setInterval(() => undefined, 1_000);
process.on('disconnect', () => process.exit(2));

async function main(): Promise<void> {
  const config = JSON.parse(process.env[KINDS_WORKER_ENV] ?? 'null') as KindsWorkerConfig;
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

  await new Promise<void>((resolve) => process.once('message', () => resolve()));
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
  clearInterval(keepAlive);
  process.disconnect();
}

main().catch(async (error: unknown) => {
  const failure = error instanceof Error ? error : new Error(String(error));
  await send({ type: 'error', message: `${failure.name}: ${failure.message}`, stack: failure.stack }).catch(
    () => undefined,
  );
  process.exit(1);
});
