import Redis from 'ioredis';
import type { AdapterSpec, LockAdapter } from './adapter';

/** The slice of redlock@4's untyped API the bench uses. */
interface RedlockV4Lock {
  unlock(): Promise<void>;
}
interface RedlockV4 {
  lock(resource: string, ttl: number): Promise<RedlockV4Lock>;
  quit(): Promise<void>;
}
type RedlockV4Constructor = new (
  clients: Redis[],
  options: { retryCount: number; retryDelay: number; retryJitter: number; driftFactor: number },
) => RedlockV4 & { on(event: 'clientError', listener: (error: Error) => void): void };

// redlock@4 ships no types; require() keeps the untyped module out of the type checker.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Redlock = require('redlock') as RedlockV4Constructor;

/** Its defaults (200 ms ± 100 ms), with retryCount -1 = retry forever, so contenders wait like ours do. */
const SETTINGS = { retryCount: -1, retryDelay: 200, retryJitter: 100, driftFactor: 0.01 };

export const redlockV4: AdapterSpec = {
  name: 'redlock 4.2.0',
  store: 'redis',
  role: 'peer',
  waiting: 'polls: retryDelay 200 ms ± 100 ms jitter (default), retryCount -1 (forever)',
  waits: true,
  renews: false,
  async create(env, options) {
    const client = new Redis(env.redisUrl);
    const redlock = new Redlock([client], SETTINGS);
    redlock.on('clientError', () => undefined);
    return {
      name: this.name,
      acquire: (key: string) => redlock.lock(`bench:${key}`, options.ttl),
      release: (lock: RedlockV4Lock) => lock.unlock(),
      async close() {
        await client.quit();
      },
    } satisfies LockAdapter<RedlockV4Lock>;
  },
};
