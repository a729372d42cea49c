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

/** Takes the lock and, only when it did, increments the key's fencing counter: in one script, so atomically. */
const FENCED_ACQUIRE = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('INCR', KEYS[2]) end
return false`;
/** Deletes the lock only if the token is still ours (what every safe Redis lock's release does). */
const COMPARE_AND_DELETE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/**
 * The least a Redis lock with a fencing token can cost the server: a token needs a counter changed in the same
 * atomic step as the grant, so one script to acquire (SET NX PX, then INCR), and one compare-and-delete script
 * to release. Less than ours guarantees: its counter never expires (a key left per name forever) and goes back
 * with a restart or failover that loses it (tokens repeat). It shows where the server time of a fenced lock
 * starts on this Redis: a script call costs more than the commands it runs. Uncontended scenario only.
 */
export const rawRedisFenced: AdapterSpec = {
  name: 'floor: fenced, SET NX PX + INCR script, compare-and-DEL script',
  store: 'redis',
  role: 'diagnostic',
  waiting: 'busy spin: retries the script immediately (no delay)',
  waits: true,
  renews: false,
  async create(env, options) {
    const client = new Redis(env.redisUrl);
    const acquireSha = (await client.script('LOAD', FENCED_ACQUIRE)) as string;
    const releaseSha = (await client.script('LOAD', COMPARE_AND_DELETE)) as string;
    return {
      name: this.name,
      async acquire(key: string): Promise<RawLock & { token: string }> {
        const name = `bench:fenced:{${key}}`;
        const token = randomUUID();
        while ((await client.evalsha(acquireSha, 2, name, `${name}:fence`, token, options.ttl)) === null) {
          // spin: the next attempt is already the wait
        }
        return { key: name, token };
      },
      async release(lock: RawLock & { token: string }): Promise<void> {
        await client.evalsha(releaseSha, 1, lock.key, lock.token);
      },
      async close() {
        await client.quit();
      },
    } satisfies LockAdapter<RawLock & { token: string }>;
  },
};
