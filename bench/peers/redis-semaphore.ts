import Redis from 'ioredis';
import { Mutex } from 'redis-semaphore';
import type { AdapterSpec, LockAdapter } from './adapter';

/** Long enough that no contender gives up inside a timed run. */
const ACQUIRE_TIMEOUT_MS = 120_000;

interface MutexHandle {
  readonly mutex: Mutex;
  lost: boolean;
}

export const redisSemaphore: AdapterSpec = {
  name: 'redis-semaphore 5.8.0 (Mutex)',
  store: 'redis',
  role: 'peer',
  waiting: 'polls: retryInterval 10 ms (default), acquireTimeout 120 s',
  waits: true,
  renews: true,
  async create(env, options) {
    const client = new Redis(env.redisUrl);
    // Its default refresh is every 0.8 x ttl; scenario 4 uses ttl/3 like ours, so both renew equally often.
    const refreshInterval = options.renew ? Math.round(options.ttl / 3) : Math.round(options.ttl * 0.8);
    return {
      name: this.name,
      async acquire(key: string): Promise<MutexHandle> {
        const handle: MutexHandle = {
          mutex: new Mutex(client, `bench:${key}`, {
            lockTimeout: options.ttl,
            acquireTimeout: ACQUIRE_TIMEOUT_MS,
            refreshInterval,
            // Its default onLockLost throws from a timer (an unhandled exception); record the loss instead.
            onLockLost: () => (handle.lost = true),
          }),
          lost: false,
        };
        await handle.mutex.acquire();
        return handle;
      },
      release: (handle: MutexHandle) => handle.mutex.release(),
      isLost: (handle: MutexHandle) => handle.lost,
      async close() {
        await client.quit();
      },
    } satisfies LockAdapter<MutexHandle>;
  },
};
