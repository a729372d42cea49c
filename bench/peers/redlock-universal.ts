import Redis from 'ioredis';
import { createLock, IoredisAdapter, type Lock, type LockHandle } from 'redlock-universal';
import type { AdapterSpec, LockAdapter } from './adapter';

/** Retries enough that contenders wait through a timed run; the delay is its default. */
const RETRY_ATTEMPTS = 1_000_000;
const RETRY_DELAY_MS = 100;

export const redlockUniversal: AdapterSpec = {
  name: 'redlock-universal 0.8.5 (ioredis adapter)',
  store: 'redis',
  role: 'peer',
  waiting: `polls: retryDelay ${RETRY_DELAY_MS} ms (default), retryAttempts ${RETRY_ATTEMPTS}; createLock default 'standard' mode`,
  waits: true,
  renews: false,
  async create(env, options) {
    const client = new Redis(env.redisUrl);
    const adapter = new IoredisAdapter(client);
    // A Lock object is bound to one key; build each once, as an application would.
    const locks = new Map<string, Lock>();
    const lockFor = (key: string): Lock => {
      let lock = locks.get(key);
      if (!lock) {
        lock = createLock({
          adapter,
          key: `bench:${key}`,
          ttl: options.ttl,
          retryAttempts: RETRY_ATTEMPTS,
          retryDelay: RETRY_DELAY_MS,
        });
        locks.set(key, lock);
      }
      return lock;
    };
    return {
      name: this.name,
      async acquire(key: string) {
        const lock = lockFor(key);
        return { lock, handle: await lock.acquire() };
      },
      async release({ lock, handle }: { lock: Lock; handle: LockHandle }) {
        await lock.release(handle);
      },
      async close() {
        await client.quit();
      },
    } satisfies LockAdapter<{ lock: Lock; handle: LockHandle }>;
  },
};
