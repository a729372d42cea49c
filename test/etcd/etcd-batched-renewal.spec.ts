import { Etcd3 } from 'etcd3';
import { firstValueFrom, skip } from 'rxjs';
import { EtcdLockBackend, LockService } from '../../lib';
import { sharedEtcdEndpoint } from '../support/shared-servers';

const HELD = 300;

describe('etcd: many held locks renew in batches (a few leases per keepalive stream, one txn per 128 keys)', () => {
  let client: Etcd3;
  let locks: LockService;

  beforeAll(() => {
    client = new Etcd3({ hosts: sharedEtcdEndpoint() });
    locks = new LockService(new EtcdLockBackend({ client }), { keyPrefix: 'batched-renewal' });
  });

  afterAll(async () => {
    await locks.close();
    client.close();
  });

  it(`keeps ${HELD} locks renewed with far fewer keepalive streams than renewals`, async () => {
    const handles = [];
    // Acquired in a few waves, as locks are in real life, so renewals fall due at different times.
    for (let wave = 0; wave < 3; wave++) {
      handles.push(
        ...(await Promise.all(
          Array.from({ length: HELD / 3 }, (_, i) => locks.acquire(`file:${wave}-${i}`, { ttl: 4_000 })),
        )),
      );
    }
    const streams = jest.spyOn(client.leaseClient, 'leaseKeepAlive');
    await Promise.all(handles.map((handle) => firstValueFrom(handle.renewals$.pipe(skip(1)))));
    const renewals = HELD * 2;
    expect(streams.mock.calls.length).toBeGreaterThan(0);
    // LEASES_PER_KEEPALIVE_STREAM (8) leases share a stream; a batch's last stream may carry fewer.
    expect(streams.mock.calls.length).toBeLessThan(renewals / 4);
    expect(handles.every((handle) => handle.isHeld)).toBe(true);
    await Promise.all(handles.map((handle) => handle.release()));
    expect(await locks.isLocked('file:0-0')).toBe(false);
    streams.mockRestore();
  });
});
