import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { describeLockContract } from './lock-contract';
import {
  closeRedisClient,
  own,
  redisFactory,
  worldOf,
  type BackendFactory,
  type BackendUnderTest,
} from '../support/backends';
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
  return own(new RedisLockBackend({ client, fairness: 'fifo' }), () => closeRedisClient(client));
}

const fifoFactory: BackendFactory = {
  ...redisFactory,
  fair: true,
  create: async () => fifoBackend(sharedRedisUrl()),
  world: () => worldOf(() => fifoBackend(sharedRedisUrl())),
  unreachable: async () => {
    const port = await freeTestPort();
    return { port, ...fifoBackend(`redis://127.0.0.1:${port}`) };
  },
};

describeLockContract(fifoFactory);
