import { Etcd3 } from 'etcd3';
import { EtcdLockBackend, LockService } from '../../lib';
import { sharedEtcdEndpoint } from '../support/shared-servers';
import { eventually } from './etcd-spec-helpers';

const NAMES = 1_000;
const TTL_MS = 2_000;

/**
 * A service that locks per order or per file takes each name once. Nothing of those locks may stay on the
 * server once they are released: not their keys, and not the leases they lived on (PITFALLS: per-name state).
 */
describe('etcd: footprint of many names taken once', () => {
  let client: Etcd3;
  let admin: Etcd3;

  beforeEach(() => {
    client = new Etcd3({ hosts: sharedEtcdEndpoint() });
    admin = new Etcd3({ hosts: sharedEtcdEndpoint() });
  });

  afterEach(() => {
    client.close();
    admin.close();
  });

  it(`leaves no key and no lease behind ${NAMES} names after ttl + a margin, with the service still open`, async () => {
    const granted: string[] = [];
    const grant = client.leaseClient.leaseGrant.bind(client.leaseClient);
    const spy = jest.spyOn(client.leaseClient, 'leaseGrant').mockImplementation(async (...args) => {
      const lease = await grant(...args);
      granted.push(String(lease.ID));
      return lease;
    });
    const locks = new LockService(new EtcdLockBackend({ client }), {
      keyPrefix: 'footprint',
      defaults: { ttl: TTL_MS },
    });
    try {
      let next = 0;
      const lane = async () => {
        while (next < NAMES) {
          const handle = await locks.acquire(`order:${next++}`);
          await handle.release();
        }
      };
      await Promise.all(Array.from({ length: 20 }, lane));
      expect((await admin.getAll().prefix('footprint/').keys()).length).toBe(0);
      // A few session leases served a thousand names.
      expect(granted.length).toBeGreaterThan(0);
      expect(granted.length).toBeLessThanOrEqual(20);
      // The idle sessions revoke their leases themselves, while the service stays open: within ttl + a margin.
      const releasedAt = Date.now();
      await eventually(
        async () => {
          const ttls = await Promise.all(
            granted.map(async (id) => Number((await admin.leaseClient.leaseTimeToLive({ ID: id })).TTL)),
          );
          return ttls.every((ttl) => ttl <= 0);
        },
        'every lease the service granted is gone',
        TTL_MS + 5_000,
      );
      expect(Date.now() - releasedAt).toBeLessThan(TTL_MS + 5_000);
      expect((await admin.getAll().prefix('footprint/').keys()).length).toBe(0);
    } finally {
      spy.mockRestore();
      await locks.close();
    }
  }, 120_000);
});
