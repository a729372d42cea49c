import { Lock, Redlock } from '@sesamecare-oss/redlock';
import Redis from 'ioredis';
import type { AdapterSpec, LockAdapter } from './adapter';

/** A lock held through `using()`, the only API of the library that renews: resolving `end` releases it. */
interface UsingHandle {
  readonly end: () => void;
  readonly done: Promise<unknown>;
  lost: boolean;
}

/** Its defaults (200 ms ± 100 ms) with retryCount -1 (forever). */
const SETTINGS = { retryCount: -1, retryDelay: 200, retryJitter: 100 };

export const sesameRedlock: AdapterSpec = {
  name: '@sesamecare-oss/redlock 1.4.0',
  store: 'redis',
  role: 'peer',
  waiting: 'polls: retryDelay 200 ms ± 100 ms jitter (default), retryCount -1 (forever)',
  waits: true,
  renews: true,
  async create(env, options) {
    const client = new Redis(env.redisUrl);
    const redlock = new Redlock([client], {
      ...SETTINGS,
      // using() extends once less than this is left; ttl * 2/3 renews at ttl/3 like ours, for a fair scenario 4.
      automaticExtensionThreshold: Math.round((options.ttl * 2) / 3),
    });
    redlock.on('error', () => undefined);
    const close = async () => {
      await client.quit();
    };
    if (!options.renew) {
      return {
        name: this.name,
        acquire: (key: string) => redlock.acquire([`bench:${key}`], options.ttl),
        release: async (lock: Lock) => {
          await lock.release();
        },
        close,
      } satisfies LockAdapter<Lock>;
    }
    return {
      name: this.name,
      acquire(key: string): Promise<UsingHandle> {
        return new Promise((resolve, reject) => {
          let handle: UsingHandle | undefined;
          const done = redlock.using([`bench:${key}`], options.ttl, async (signal) => {
            await new Promise<void>((end) => {
              handle = { end, done, lost: false };
              signal.addEventListener('abort', () => (handle!.lost = true));
              resolve(handle);
            });
          });
          done.catch((error: unknown) => (handle ? (handle.lost = true) : reject(error)));
        });
      },
      async release(handle: UsingHandle) {
        handle.end();
        await handle.done.catch(() => undefined);
      },
      isLost: (handle: UsingHandle) => handle.lost,
      close,
    } satisfies LockAdapter<UsingHandle>;
  },
};
