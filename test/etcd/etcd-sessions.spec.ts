import { Etcd3 } from 'etcd3';
import { firstValueFrom, lastValueFrom, skip } from 'rxjs';
import { EtcdLockBackend, LockLostError, LockService } from '../../lib';
import { sharedEtcdEndpoint } from '../support/shared-servers';
import { contenders, eventually, held, lockRequest, stateOf } from './etcd-spec-helpers';

const HELD = 40;

/** Every key under the prefix, with the lease it lives on. */
async function keysOf(client: Etcd3, prefix: string): Promise<{ key: string; lease: string }[]> {
  const response = await client.getAll().prefix(prefix).exec();
  return response.kvs.map((kv) => ({ key: kv.key.toString(), lease: String(kv.lease) }));
}

/** The shared etcd serves other suites at once, so leases are checked one by one, never counted. */
async function leaseExists(client: Etcd3, id: string): Promise<boolean> {
  return Number((await client.leaseClient.leaseTimeToLive({ ID: id })).TTL) > 0;
}

describe('etcd: held locks share one session lease per ttl', () => {
  let client: Etcd3;
  let admin: Etcd3;
  let locks: LockService;

  beforeEach(() => {
    client = new Etcd3({ hosts: sharedEtcdEndpoint() });
    admin = new Etcd3({ hosts: sharedEtcdEndpoint() });
    locks = new LockService(new EtcdLockBackend({ client }), { keyPrefix: 'etcd-sessions' });
  });

  afterEach(async () => {
    await locks.close();
    client.close();
    admin.close();
  });

  it(`puts ${HELD} locks on one lease from their first acquire, renews them with it, and revokes it once idle`, async () => {
    const grants = jest.spyOn(client.leaseClient, 'leaseGrant');
    const handles = await Promise.all(
      Array.from({ length: HELD }, (_, i) => locks.acquire(`shared:${i}`, { ttl: 3_000 })),
    );
    const tokens = handles.map((handle) => handle.fencingToken);
    // One lease for every name: granted once, not once per lock.
    const keys = await keysOf(admin, 'etcd-sessions/shared');
    expect(keys).toHaveLength(HELD);
    const session = keys[0].lease;
    expect(new Set(keys.map(({ lease }) => lease))).toEqual(new Set([session]));
    expect(grants).toHaveBeenCalledTimes(1);
    grants.mockRestore();
    // Renewals keep every lock on that lease; the fencing tokens (create revisions) do not change.
    await Promise.all(handles.map((handle) => firstValueFrom(handle.renewals$.pipe(skip(1)))));
    expect(handles.every((handle) => handle.isHeld)).toBe(true);
    expect(new Set((await keysOf(admin, 'etcd-sessions/shared')).map(({ lease }) => lease))).toEqual(
      new Set([session]),
    );
    expect(handles.map((handle) => handle.fencingToken)).toEqual(tokens);

    // A release deletes its own key only.
    await handles[0].release();
    expect(await keysOf(admin, 'etcd-sessions/shared:0/')).toEqual([]);
    expect(await keysOf(admin, 'etcd-sessions/shared')).toHaveLength(HELD - 1);
    expect(await locks.isLocked('shared:1')).toBe(true);
    await Promise.all(handles.slice(1).map((handle) => handle.release()));
    expect(await keysOf(admin, 'etcd-sessions/shared')).toEqual([]);
    await eventually(async () => !(await leaseExists(admin, session)), 'the idle session lease is revoked');
  });

  it('gives each contender for one name in this process a lease of its own (each needs its own key)', async () => {
    const holder = await locks.acquire('same-name', { ttl: 3_000 });
    const waiting = locks.acquire('same-name', { ttl: 3_000 });
    await eventually(
      async () => (await keysOf(admin, 'etcd-sessions/same-name/')).length === 2,
      'the second contender queued',
    );
    const [first, second] = await keysOf(admin, 'etcd-sessions/same-name/');
    expect(first.lease).not.toBe(second.lease);
    await holder.release();
    const next = await waiting;
    expect(next.fencingToken).toBeGreaterThan(holder.fencingToken);
    await next.release();
  });

  it('reports every lock on a session lease lost when that lease is revoked, and later locks get a new one', async () => {
    const handles = await Promise.all(
      Array.from({ length: 5 }, (_, i) => locks.acquire(`revoked:${i}`, { ttl: 3_000 })),
    );
    const [{ lease }] = await keysOf(admin, 'etcd-sessions/revoked');
    // The stream ends only by erroring (lost) or completing (released): wait for that, whatever renews first.
    const lost = handles.map((handle) => lastValueFrom(handle.renewals$).catch((error: unknown) => error));
    await admin.leaseClient.leaseRevoke({ ID: lease });
    for (const error of await Promise.all(lost)) expect(error).toBeInstanceOf(LockLostError);
    expect(handles.every((handle) => handle.signal.aborted)).toBe(true);
    await Promise.all(handles.map((handle) => handle.release()));

    const next = await locks.acquire('revoked:0', { ttl: 3_000 });
    const [fresh] = await keysOf(admin, 'etcd-sessions/revoked:0/');
    expect(fresh.lease).not.toBe(lease);
    await firstValueFrom(next.renewals$);
    expect(next.isHeld).toBe(true);
    await next.release();
  });

  it('drops the key of a lock its holder stopped renewing, while the session lives on for the others', async () => {
    const backend = new EtcdLockBackend({ client });
    const requests = [lockRequest('kept', 2_000), lockRequest('abandoned', 2_000)];
    const [kept, abandoned] = await Promise.all(
      requests.map(async (request) => held(request, await backend.acquire(request, new AbortController().signal))),
    );
    // Both live on the one session lease from their acquire.
    expect(
      await backend.extendMany([
        { lock: kept, ttl: 2_000 },
        { lock: abandoned, ttl: 2_000 },
      ]),
    ).toEqual([expect.any(Number), expect.any(Number)]);
    const session = stateOf(kept as never).leaseId;
    expect(stateOf(abandoned as never).leaseId).toBe(session);
    // Only "kept" is renewed from now on, as the watchdog would once the other handle is lost.
    const abandonedKey = stateOf(abandoned as never).keyPath;
    await eventually(async () => {
      expect(await backend.extendMany([{ lock: kept, ttl: 2_000 }])).toEqual([expect.any(Number)]);
      return (await contenders(admin, 'abandoned')).length === 0;
    }, 'the abandoned key is deleted');
    expect((await contenders(admin, 'kept')).map((kv) => String(kv.lease))).toEqual([session]);
    expect(abandonedKey).toContain('abandoned');
    // The name is free for others, and a late release of the abandoned lock touches nothing.
    const next = await backend.tryAcquire(lockRequest('abandoned', 2_000));
    expect(next).not.toBeNull();
    await expect(backend.release(abandoned)).resolves.toBe(false);
    expect(await contenders(admin, 'abandoned')).toHaveLength(1);
    await backend.release(held(lockRequest('abandoned', 2_000), next!));
    await backend.release(kept);
    await eventually(async () => !(await leaseExists(admin, session)), 'the session lease is revoked');
    await backend.close();
  });
});
