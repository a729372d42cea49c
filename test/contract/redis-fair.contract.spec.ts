import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { describeLockContract } from './lock-contract';
import { redisFactory, type BackendFactory, type BackendUnderTest, type BackendWorld } from '../support/backends';
import { freeTestPort } from '../support/free-port';
import { sharedRedisUrl } from '../support/shared-servers';

/**
 * The shared contract suite against the Redis backend in FIFO mode: every generic promise still holds, and the
 * suite's "grants queued waiters in arrival order" case runs too (fair: true). Forked workers in the
 * cross-process cases use the default (non-FIFO) backend on the same keys, which must stay safe alongside.
 */
function fifoBackend(url: string): BackendUnderTest {
  const client = new Redis(url);
  client.on('error', () => undefined);
  const backend = new RedisLockBackend({ client, fairness: 'fifo' });
  let closing: Promise<void> | undefined;
  return {
    backend,
    close: () =>
      (closing ??= (async () => {
        try {
          await backend.close();
        } finally {
          if (client.status === 'ready') await client.quit().catch(() => undefined);
          client.disconnect();
        }
      })()),
  };
}

function fifoWorld(): BackendWorld {
  const opened: BackendUnderTest[] = [];
  return {
    connect() {
      const connection = fifoBackend(sharedRedisUrl());
      opened.push(connection);
      return connection;
    },
    async close() {
      await Promise.allSettled(opened.splice(0).map((connection) => connection.close()));
    },
  };
}

const fifoFactory: BackendFactory = {
  ...redisFactory,
  fair: true,
  create: async () => fifoBackend(sharedRedisUrl()),
  world: fifoWorld,
  unreachable: async () => {
    const port = await freeTestPort();
    return { port, ...fifoBackend(`redis://127.0.0.1:${port}`) };
  },
};

describeLockContract(fifoFactory);
