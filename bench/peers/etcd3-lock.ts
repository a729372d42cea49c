import { Etcd3, EtcdLockFailedError, Lock } from 'etcd3';
import { sleep } from '../lib/clock';
import type { AdapterSpec, LockAdapter } from './adapter';

/** etcd3's Lock fails at once when the key is taken (microsoft/etcd3#106); the bench retries it this often. */
const RETRY_DELAY_MS = 10;

interface Etcd3Handle {
  readonly lock: Lock;
  lost: boolean;
}

export const etcd3Lock: AdapterSpec = {
  name: 'etcd3 1.1.2 Lock (+ retry loop)',
  store: 'etcd',
  role: 'peer',
  waiting: `its Lock does not wait; the bench retries acquire() every ${RETRY_DELAY_MS} ms (each failed try is grant + txn + revoke)`,
  waits: true,
  renews: true,
  async create(env, options) {
    const client = new Etcd3({ hosts: env.etcdEndpoint });
    const seconds = Math.max(1, Math.ceil(options.ttl / 1000));
    return {
      name: this.name,
      async acquire(key: string): Promise<Etcd3Handle> {
        for (;;) {
          // A Lock object owns its lease (kept alive by etcd3 itself) and is spent after one acquire.
          const lock = client.lock(`bench/etcd3/${key}`).ttl(seconds);
          try {
            await lock.acquire();
            const handle: Etcd3Handle = { lock, lost: false };
            (lock as unknown as { lease?: NodeJS.EventEmitter }).lease?.on('lost', () => (handle.lost = true));
            return handle;
          } catch (error) {
            if (!(error instanceof EtcdLockFailedError)) throw error;
          }
          await sleep(RETRY_DELAY_MS);
        }
      },
      async release(handle: Etcd3Handle): Promise<void> {
        await handle.lock.release();
      },
      isLost: (handle: Etcd3Handle) => handle.lost,
      async close() {
        client.close();
      },
    } satisfies LockAdapter<Etcd3Handle>;
  },
};
