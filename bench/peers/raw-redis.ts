import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type { AdapterSpec, LockAdapter } from './adapter';

interface RawLock {
  readonly key: string;
}

/**
 * The physical limit: the bare commands a Redis lock needs, from the same ioredis client type, with no
 * library around them. `SET key token NX PX ttl` to take, `DEL key` to give back (unsafe as a lock: it does
 * not check the token). When busy it retries at once (a busy spin), the fastest any poller could react.
 */
export const rawRedis: AdapterSpec = {
  name: 'limit: raw SET NX PX + DEL',
  store: 'redis',
  role: 'limit',
  waiting: 'busy spin: retries SET NX immediately (no delay)',
  waits: true,
  renews: false,
  async create(env, options) {
    const client = new Redis(env.redisUrl);
    return {
      name: this.name,
      async acquire(key: string): Promise<RawLock> {
        const name = `bench:raw:${key}`;
        const token = randomUUID();
        while ((await client.set(name, token, 'PX', options.ttl, 'NX')) !== 'OK') {
          // spin: the next attempt is already the wait
        }
        return { key: name };
      },
      async release(lock: RawLock): Promise<void> {
        await client.del(lock.key);
      },
      async close() {
        await client.quit();
      },
    } satisfies LockAdapter<RawLock>;
  },
};
