import { randomUUID } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import type { AdapterSpec, LockAdapter } from './adapter';

const COMPARE_EQUAL = 0;
const TARGET_CREATE = 1;

/**
 * The limit on etcd: lease grant + txn (put on that lease if the key does not exist) + delete, on etcd3's raw
 * gRPC clients: the fewest round trips that take and free a key on a lease. No revoke: the lease just
 * expires after its ttl. (Revoking instead of deleting also frees the key, at the same cost of one write.)
 */
export const rawEtcd: AdapterSpec = {
  name: 'limit: raw lease grant + txn put + delete',
  store: 'etcd',
  role: 'limit',
  waiting: 'does not wait (uncontended only)',
  waits: false,
  renews: false,
  async create(env, options) {
    const client = new Etcd3({ hosts: env.etcdEndpoint });
    const seconds = Math.max(1, Math.ceil(options.ttl / 1000));
    return {
      name: this.name,
      async acquire(key: string): Promise<Buffer> {
        const name = Buffer.from(`bench/raw/${key}`);
        const lease = await client.leaseClient.leaseGrant({ TTL: seconds });
        const txn = await client.kv.txn({
          compare: [{ key: name, target: TARGET_CREATE, result: COMPARE_EQUAL, create_revision: 0 }],
          success: [{ request_put: { key: name, value: Buffer.from(randomUUID()), lease: lease.ID } }],
          failure: [],
        });
        if (!txn.succeeded) throw new Error(`${name.toString()} is busy: the raw etcd row is for uncontended runs`);
        return name;
      },
      async release(name: Buffer): Promise<void> {
        await client.kv.deleteRange({ key: name });
      },
      async close() {
        client.close();
      },
    } satisfies LockAdapter<Buffer>;
  },
};

/**
 * The floor for a lock on a session lease (Go's `concurrency.Session`, and ours since issue 18): one lease
 * granted when the client opens and kept for the run, then per cycle a put-if-absent txn on it + a delete, on
 * etcd3's raw gRPC clients. Two Raft writes per cycle, the fewest that take and free a key.
 */
export const rawEtcdSession: AdapterSpec = {
  name: 'limit: raw txn put on a kept lease + delete',
  store: 'etcd',
  role: 'limit',
  waiting: 'does not wait (uncontended only)',
  waits: false,
  renews: false,
  async create(env, options) {
    const client = new Etcd3({ hosts: env.etcdEndpoint });
    // Long enough for the whole run: the bench sends no keepalive.
    const lease = await client.leaseClient.leaseGrant({ TTL: Math.max(600, Math.ceil(options.ttl / 1000)) });
    return {
      name: this.name,
      async acquire(key: string): Promise<Buffer> {
        const name = Buffer.from(`bench/raw-session/${key}`);
        const txn = await client.kv.txn({
          compare: [{ key: name, target: TARGET_CREATE, result: COMPARE_EQUAL, create_revision: 0 }],
          success: [{ request_put: { key: name, value: Buffer.from(randomUUID()), lease: lease.ID } }],
          failure: [],
        });
        if (!txn.succeeded) throw new Error(`${name.toString()} is busy: the raw etcd row is for uncontended runs`);
        return name;
      },
      async release(name: Buffer): Promise<void> {
        await client.kv.deleteRange({ key: name });
      },
      async close() {
        await client.leaseClient.leaseRevoke({ ID: lease.ID }).catch(() => undefined);
        client.close();
      },
    } satisfies LockAdapter<Buffer>;
  },
};
