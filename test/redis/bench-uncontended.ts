/**
 * Rough throughput of uncontended tryAcquire + release on a local redis-server (not a test; prints a figure).
 * Run: node --require ./test/support/ts-register.js test/redis/bench-uncontended.ts
 */
import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { startLocalRedis } from './local-redis-server';

const DURATION_MS = 2_000;

async function main(): Promise<void> {
  const server = await startLocalRedis();
  const client = new Redis(server.url);
  const backend = new RedisLockBackend({ client });
  try {
    let cycles = 0;
    const endAt = performance.now() + DURATION_MS;
    while (performance.now() < endAt) {
      const request = { namespace: 'bench', key: 'uncontended', token: randomUUID(), ttl: 10_000 };
      const grant = await backend.tryAcquire(request);
      if (!grant) throw new Error('the key should be free');
      await backend.release({ ...request, fencingToken: grant.fencingToken });
      cycles++;
    }
    const perSecond = Math.round((cycles * 1_000) / DURATION_MS);
    console.log(
      `uncontended tryAcquire+release: ${perSecond} cycles/s (${cycles} in ${DURATION_MS} ms, one sequential caller)`,
    );
  } finally {
    await backend.close();
    await client.quit();
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
