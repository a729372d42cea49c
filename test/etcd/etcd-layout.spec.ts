import { Etcd3 } from 'etcd3';
import { EtcdLockBackend } from '../../lib/backends/etcd/etcd-lock.backend';
import { lockPrefix, prefixRangeEnd } from '../../lib/backends/etcd/etcd-key-layout';
import { startEtcd, type TestEtcdServer } from '../support/etcd-server';
import { contenderKeys, contenders, held, lockRequest, NAMESPACE, queued, stateOf, track } from './etcd-spec-helpers';

describe('EtcdLockBackend key layout, isolation and fencing', () => {
  let server: TestEtcdServer;
  let client: Etcd3;
  let backend: EtcdLockBackend;

  beforeAll(async () => {
    server = await startEtcd();
    client = new Etcd3({ hosts: server.endpoint });
    backend = new EtcdLockBackend({ client });
  });

  afterAll(async () => {
    await backend?.close();
    client?.close();
    await server?.stop();
  });

  it('stores each contender as <ns>/<enc(key)>/<lease hex> on its lease, with the owner token as value', async () => {
    const request = lockRequest('reports/2024:Q1');
    const grant = (await backend.tryAcquire(request))!;
    const state = stateOf(grant);
    const expectedKey = `${NAMESPACE}/reports%2F2024:Q1/${BigInt(state.leaseId).toString(16)}`;
    expect(state.keyPath).toBe(expectedKey);

    const [kv] = await contenders(client, request.key);
    expect(kv.key.toString()).toBe(expectedKey);
    expect(kv.value.toString().split(' ')[0]).toBe(request.token);
    expect(kv.lease).toBe(state.leaseId);
    expect(state.createRevision).toBe(kv.create_revision);
    expect(state.leaseTtlSeconds).toBeGreaterThanOrEqual(5);
    expect(state.requestedTtlSeconds).toBe(5);
    expect(await backend.release(held(request, grant))).toBe(true);
    expect(await contenders(client, request.key)).toEqual([]);
  });

  it('isolates user, user/1 and user1 from each other', async () => {
    const names = ['user', 'user/1', 'user1'];
    const requests = names.map((name) => lockRequest(name));
    const grants = await Promise.all(requests.map((request) => backend.tryAcquire(request)));
    expect(grants.every((grant) => grant !== null)).toBe(true);
    for (const name of names) expect(await contenderKeys(client, name)).toHaveLength(1);

    expect(await backend.release(held(requests[0], grants[0]!))).toBe(true);
    expect(await backend.isLocked(NAMESPACE, 'user')).toBe(false);
    expect(await backend.isLocked(NAMESPACE, 'user/1')).toBe(true);
    expect(await backend.isLocked(NAMESPACE, 'user1')).toBe(true);
    // Nothing of the others shows up under user's range.
    const start = Buffer.from(lockPrefix(NAMESPACE, 'user'));
    expect((await client.kv.range({ key: start, range_end: prefixRangeEnd(start) })).kvs).toEqual([]);
    await backend.release(held(requests[1], grants[1]!));
    await backend.release(held(requests[2], grants[2]!));
  });

  it('uses the key’s create revision as fencing token, increasing with every grant', async () => {
    const tokens: bigint[] = [];
    for (let i = 0; i < 4; i++) {
      const request = lockRequest('fenced');
      const grant = (await backend.tryAcquire(request))!;
      const [kv] = await contenders(client, 'fenced');
      expect(grant.fencingToken).toBe(BigInt(kv.create_revision));
      tokens.push(grant.fencingToken);
      await backend.release(held(request, grant));
    }
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
  });

  it('reports validity measured from the grant, no longer than the requested ttl', async () => {
    const before = performance.now();
    const request = lockRequest('validity', 1_500);
    const grant = (await backend.tryAcquire(request))!;
    expect(grant.validUntil).toBeGreaterThan(before + 1_000);
    expect(grant.validUntil).toBeLessThanOrEqual(performance.now() + 1_500);
    await backend.release(held(request, grant));
  });

  describe('interoperates with Go concurrency.Mutex / `etcdctl lock locks/file:1`', () => {
    /** What a Go Mutex on "locks/file:1" does: its own lease, key <pfx><lease hex>, put if create_revision == 0. */
    async function goContender(): Promise<{ key: string; isOwner: boolean; unlock(): Promise<void> }> {
      const lease = await client.leaseClient.leaseGrant({ TTL: 10 });
      const key = `locks/file:1/${BigInt(lease.ID).toString(16)}`;
      const pfx = Buffer.from('locks/file:1/');
      const txn = await client.kv.txn({
        compare: [{ key: Buffer.from(key), target: 1, result: 0, create_revision: 0 }],
        success: [
          { request_put: { key: Buffer.from(key), value: Buffer.from(''), lease: lease.ID } },
          { request_range: { key: pfx, range_end: prefixRangeEnd(pfx), sort_target: 2, sort_order: 1, limit: 1 } },
        ],
      });
      const myRev = txn.header.revision;
      const owner = txn.responses[1].response_range.kvs[0];
      return {
        key,
        isOwner: owner.create_revision === myRev,
        unlock: async () => {
          await client.kv.deleteRange({ key: Buffer.from(key) });
          await client.leaseClient.leaseRevoke({ ID: lease.ID });
        },
      };
    }

    it('waits while a Go client holds the lock, and gets it after the Go client unlocks', async () => {
      const go = await goContender();
      expect(go.isOwner).toBe(true);
      expect(await backend.tryAcquire(lockRequest('file:1'))).toBeNull();
      expect(await backend.isLocked('locks', 'file:1')).toBe(true);

      const request = lockRequest('file:1');
      const waiting = track(backend.acquire(request, new AbortController().signal));
      await queued(client, 'file:1', 2);
      expect(waiting.settled()).toBe(false);
      await go.unlock();
      const grant = await waiting.promise;
      expect(await contenderKeys(client, 'file:1')).toEqual([stateOf(grant).keyPath]);
      await backend.release(held(request, grant));
    });

    it('makes a Go client queue behind our holder', async () => {
      const request = lockRequest('file:1');
      const grant = (await backend.tryAcquire(request))!;
      const go = await goContender();
      expect(go.isOwner).toBe(false);
      expect(await contenderKeys(client, 'file:1')).toEqual([stateOf(grant).keyPath, go.key]);
      await backend.release(held(request, grant));
      // The Go client's key is now the lowest create revision: it owns the lock.
      expect(await contenderKeys(client, 'file:1')).toEqual([go.key]);
      await go.unlock();
    });
  });
});
