import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import Redis from 'ioredis';
import { ACQUIRE_SCRIPT } from '../../lib/backends/redis/acquire.lua';
import { DEFAULT_FENCE_RETENTION } from '../../lib/backends/redis/fence-retention';
import { acquireCall, releaseCall, type ScriptCall } from '../../lib/backends/redis/lock-calls';
import { RELEASE_SCRIPT } from '../../lib/backends/redis/release.lua';
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

/**
 * Our own two scripts (the uncontended acquire and the FIFO-mode release, as LockService runs them by default),
 * sent with EVALSHA straight from ioredis: no backend, watchdog or LockService code around them. Beside the
 * LockService and backend-only rows it splits our cost into the server's (these scripts) and our client code's.
 * The token carries a holder id of the length LockService stores. Uncontended scenario only.
 */
export const oursRedisScriptsOnly: AdapterSpec = {
  name: 'ours: the two scripts alone (EVALSHA, no library code)',
  store: 'redis',
  role: 'diagnostic',
  waiting: 'does not wait (uncontended only)',
  waits: false,
  renews: false,
  async create(env, options) {
    const client = new Redis(env.redisUrl);
    await client.script('LOAD', ACQUIRE_SCRIPT.source);
    await client.script('LOAD', RELEASE_SCRIPT.source);
    const holder = `${hostname()}/${process.pid}/0a1b2c3d`;
    return {
      name: this.name,
      async acquire(key: string): Promise<ScriptCall> {
        const request = { namespace: 'bench', key, token: `${randomUUID()}||${holder}`, ttl: options.ttl };
        const take = acquireCall(request, 'none', SCRIPT_WAITER_TTL, DEFAULT_FENCE_RETENTION, false);
        const reply = await client.evalsha(take.script.sha1, take.keys.length, ...take.keys, ...take.args);
        if (typeof reply !== 'string') throw new Error(`${key} is busy: the scripts-only row is for uncontended runs`);
        return releaseCall(request, true, request.token, DEFAULT_FENCE_RETENTION);
      },
      async release(give: ScriptCall): Promise<void> {
        await client.evalsha(give.script.sha1, give.keys.length, ...give.keys, ...give.args);
      },
      async close() {
        await client.quit();
      },
    } satisfies LockAdapter<ScriptCall>;
  },
};

/** A try sends no waiter ttl; any value does. */
const SCRIPT_WAITER_TTL = 5_000;
