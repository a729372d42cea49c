import { Etcd3 } from 'etcd3';
import { keepAliveMany, LEASES_PER_KEEPALIVE_STREAM } from '../../lib/backends/etcd/etcd-lease';
import { EtcdLockBackend, LockHandle, LockLostError, LockService } from '../../lib';
import { sharedEtcdEndpoint } from '../support/shared-servers';

describe('etcd: renewal keepalive streams', () => {
  let client: Etcd3;

  beforeAll(() => {
    client = new Etcd3({ hosts: sharedEtcdEndpoint() });
  });

  afterAll(() => client.close());

  it('spreads a batch over parallel streams of a few leases each, and answers every lease', async () => {
    const leases = await Promise.all(
      Array.from({ length: LEASES_PER_KEEPALIVE_STREAM * 3 + 1 }, () => client.leaseClient.leaseGrant({ TTL: 10 })),
    );
    const streams = jest.spyOn(client.leaseClient, 'leaseKeepAlive');
    try {
      const ttls = await keepAliveMany(
        client.leaseClient,
        leases.map((lease) => lease.ID),
        5_000,
      );
      expect(streams).toHaveBeenCalledTimes(4);
      expect(leases.every((lease) => (ttls.get(String(lease.ID)) ?? 0) > 0)).toBe(true);
    } finally {
      streams.mockRestore();
      await Promise.all(leases.map((lease) => client.leaseClient.leaseRevoke({ ID: lease.ID })));
    }
  });

  it('keeps 1,000 locks of ttl 3 s held over several renewal periods while they are still being acquired', async () => {
    const locks = new LockService(new EtcdLockBackend({ client }), {
      keyPrefix: 'keepalive-streams',
      defaults: { ttl: 3_000 },
    });
    // On failure, say why and when the locks were lost: a loss here has only ever shown up in whole CI runs.
    const startedAt = performance.now();
    const sinceStart = () => Math.round(performance.now() - startedAt);
    const lost: { reason: string; at: number; renewals: number }[] = [];
    const seen = { acquiredBy: -1, atRisk: 0, firstAtRisk: '' };
    try {
      const handles: LockHandle[] = [];
      let next = 0;
      const lane = async () => {
        while (next < 1_000) {
          const handle = await locks.acquire(`held:${next++}`);
          let renewals = 0;
          handle.renewals$.subscribe({
            next: (renewal) => {
              if (renewal.type === 'renewed') return void renewals++;
              seen.atRisk++;
              seen.firstAtRisk ||= renewal.error.message;
            },
            error: (error: LockLostError) => lost.push({ reason: error.reason, at: sinceStart(), renewals }),
          });
          handles.push(handle);
        }
      };
      await Promise.all(Array.from({ length: 100 }, lane));
      seen.acquiredBy = sinceStart();
      // Four renewal periods of the last lock acquired; every earlier one has renewed more often.
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      expect(describeLosses(lost, seen)).toEqual([]);
      expect(handles.filter((handle) => !handle.isHeld)).toHaveLength(0);
    } finally {
      await locks.close();
    }
  }, 60_000);
});

/** One line per loss reason: how many, when (ms after the first acquire), after how many renewals. */
function describeLosses(
  lost: readonly { reason: string; at: number; renewals: number }[],
  seen: { acquiredBy: number; atRisk: number; firstAtRisk: string },
): string[] {
  const byReason = new Map<string, { at: number[]; renewals: number[] }>();
  for (const { reason, at, renewals } of lost) {
    const group = byReason.get(reason) ?? { at: [], renewals: [] };
    group.at.push(at);
    group.renewals.push(renewals);
    byReason.set(reason, group);
  }
  return [...byReason].map(
    ([reason, { at, renewals }]) =>
      `${at.length} lost: ${reason}; at ${Math.min(...at)}-${Math.max(...at)} ms, after ` +
      `${Math.min(...renewals)}-${Math.max(...renewals)} renewals (all acquired by ${seen.acquiredBy} ms; ` +
      `${seen.atRisk} at-risk notices, the first: ${seen.firstAtRisk || 'none'})`,
  );
}
