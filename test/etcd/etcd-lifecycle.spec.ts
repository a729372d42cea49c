import { Etcd3 } from 'etcd3';
import { EtcdLockBackend } from '../../lib/backends/etcd/etcd-lock.backend';
import { LockBackendError } from '../../lib/errors';
import { LockService } from '../../lib/lock.service';
import { startEtcd, type TestEtcdServer } from '../support/etcd-server';
import {
  contenders,
  eventually,
  held,
  lockRequest,
  NAMESPACE,
  queued,
  stateOf,
  track,
  never,
} from './etcd-spec-helpers';
import { within } from '../support/time';

describe('EtcdLockBackend with a client it creates itself', () => {
  it('serves calls again within about a second of etcd coming back from a crash (etcd3 alone refuses them for 5 s)', async () => {
    const crashing = await startEtcd();
    const own = new EtcdLockBackend({ hosts: crashing.endpoint });
    try {
      const holder = lockRequest('crash-held', 20_000);
      const grant = await own.tryAcquire(holder);
      expect(grant).not.toBeNull();
      await crashing.kill('SIGKILL');
      // Calls during the outage fail; three in a row open etcd3's circuit breaker for the host.
      for (const index of [1, 2, 3]) {
        await expect(own.tryAcquire(lockRequest(`during-crash-${index}`))).rejects.toBeInstanceOf(LockBackendError);
      }
      await crashing.restart();
      const backAt = performance.now();
      await eventually(
        () =>
          own.tryAcquire(lockRequest('after-crash')).then(
            (granted) => granted !== null,
            () => false,
          ),
        'a grant after the restart',
        15_000,
      );
      expect(performance.now() - backAt).toBeLessThan(2_500);
      // The held lock lived through it: its lease is still ours.
      expect(await own.extend(held(holder, grant!), 20_000)).not.toBeNull();
    } finally {
      await own.close();
      await crashing.stop();
    }
  }, 60_000);
});

describe('EtcdLockBackend extend, release and close', () => {
  let server: TestEtcdServer;
  let client: Etcd3;
  let admin: Etcd3;
  let backend: EtcdLockBackend;

  beforeAll(async () => {
    server = await startEtcd();
    client = new Etcd3({ hosts: server.endpoint });
    admin = new Etcd3({ hosts: server.endpoint });
    backend = new EtcdLockBackend({ client });
  });

  afterAll(async () => {
    await backend?.close();
    client?.close();
    admin?.close();
    await server?.stop();
  });

  const leaseExists = async (id: string) => Number((await admin.leaseClient.leaseTimeToLive({ ID: id })).TTL) > 0;

  describe('extend', () => {
    it('with the same ttl keeps the lease alive and the create revision', async () => {
      const request = lockRequest('extend-same', 4_000);
      const grant = (await backend.tryAcquire(request))!;
      const before = performance.now();
      const validUntil = await backend.extend(held(request, grant), 4_000);
      expect(validUntil).toBeGreaterThan(before + 3_000);
      expect(validUntil).toBeLessThanOrEqual(performance.now() + 4_000);
      const [kv] = await contenders(admin, 'extend-same');
      expect(kv.create_revision).toBe(stateOf(grant).createRevision);
      expect(kv.lease).toBe(stateOf(grant).leaseId);
      await backend.release(held(request, grant));
    });

    it('with another ttl moves the key to a new lease, keeping the create revision, and revokes the old one', async () => {
      const request = lockRequest('extend-other', 2_000);
      const grant = (await backend.tryAcquire(request))!;
      const state = stateOf(grant);
      const oldLease = state.leaseId;
      const before = performance.now();
      const validUntil = await backend.extend(held(request, grant), 7_000);
      expect(validUntil).toBeGreaterThan(before + 6_000);
      expect(state.leaseId).not.toBe(oldLease);
      expect(state.requestedTtlSeconds).toBe(7);
      expect(state.leaseTtlSeconds).toBeGreaterThanOrEqual(7);
      const [kv] = await contenders(admin, 'extend-other');
      expect(kv.create_revision).toBe(state.createRevision);
      expect(kv.lease).toBe(state.leaseId);
      expect(kv.value.toString().split(' ')[0]).toBe(request.token);
      await eventually(async () => !(await leaseExists(oldLease)), 'the old lease is revoked');
      // The next renewal with the new ttl is a plain keepalive again.
      expect(await backend.extend(held(request, grant), 7_000)).toEqual(expect.any(Number));
      expect(stateOf(grant).leaseId).toBe(kv.lease);
      expect(await backend.release(held(request, grant))).toBe(true);
      expect(await contenders(admin, 'extend-other')).toEqual([]);
    });

    it('resolves null once the lease is gone or the key was deleted', async () => {
      const request = lockRequest('extend-lost');
      const grant = (await backend.tryAcquire(request))!;
      await admin.leaseClient.leaseRevoke({ ID: stateOf(grant).leaseId });
      expect(await backend.extend(held(request, grant), 5_000)).toBeNull();
      expect(await backend.extend(held(request, grant), 9_000)).toBeNull();

      const other = lockRequest('extend-deleted');
      const otherGrant = (await backend.tryAcquire(other))!;
      await admin.delete().key(stateOf(otherGrant).keyPath);
      expect(await backend.extend(held(other, otherGrant), 5_000)).toBeNull();
      // Once no key is left on it for a renewal period, the session revokes its lease: nothing is left behind.
      await backend.release(held(other, otherGrant));
      await eventually(
        async () => !(await leaseExists(stateOf(otherGrant).leaseId)),
        'the idle session lease is revoked',
      );
    });
  });

  describe('release', () => {
    it('deletes the key, keeps the session lease for the next lock a while, then revokes it, and wakes the next waiter', async () => {
      const request = lockRequest('release');
      const grant = (await backend.tryAcquire(request))!;
      const next = lockRequest('release');
      const waiting = backend.acquire(next, never());
      await queued(admin, 'release', 2);
      expect(await backend.release(held(request, grant))).toBe(true);
      expect((await contenders(admin, 'release')).map((kv) => kv.key.toString())).not.toContain(stateOf(grant).keyPath);
      // One delete per release: the lease stays for the next lock (no grant and revoke per lock), until idle.
      await eventually(async () => !(await leaseExists(stateOf(grant).leaseId)), 'the idle session lease is revoked');
      const nextGrant = await waiting;
      // Retried release: our revision is gone, the next holder's key is untouched.
      expect(await backend.release(held(request, grant))).toBe(false);
      expect(await backend.isLocked(NAMESPACE, 'release')).toBe(true);
      await backend.release(held(next, nextGrant));
    });

    it("by an earlier holder of the same key touches neither the new holder's key nor its lease", async () => {
      const request = lockRequest('earlier-holder');
      const grant = (await backend.tryAcquire(request))!;
      expect(await backend.release(held(request, grant))).toBe(true);
      const next = lockRequest('earlier-holder');
      const nextGrant = (await backend.tryAcquire(next))!;
      // A retried or late release of the first grant revokes only its own (gone) lease.
      expect(await backend.release(held(request, grant))).toBe(false);
      expect(await contenders(admin, 'earlier-holder')).toHaveLength(1);
      expect(await leaseExists(stateOf(nextGrant).leaseId)).toBe(true);
      expect(await backend.release(held(next, nextGrant))).toBe(true);
    });
  });

  describe('close', () => {
    it('rejects pending waiters with a LockBackendError, revokes their leases, and is idempotent', async () => {
      const own = new EtcdLockBackend({ hosts: server.endpoint });
      const holder = lockRequest('closing');
      const first = (await backend.tryAcquire(holder))!;
      const waiting = track(own.acquire(lockRequest('closing'), never()));
      await queued(admin, 'closing', 2);
      const waiterLease = (await contenders(admin, 'closing'))[1].lease;

      await Promise.all([own.close(), own.close()]);
      await expect(waiting.promise).rejects.toBeInstanceOf(LockBackendError);
      expect(await contenders(admin, 'closing')).toHaveLength(1);
      expect(await leaseExists(waiterLease)).toBe(false);
      await own.close();
      await expect(own.acquire(lockRequest('closing'), never())).rejects.toBeInstanceOf(LockBackendError);
      await expect(own.isLocked(NAMESPACE, 'closing')).rejects.toThrow(/closed/);
      await backend.release(held(holder, first));
    });

    it('fails a queued acquire soon after the application closed the client it passed in, not at its wait end', async () => {
      const borrowed = new Etcd3({ hosts: server.endpoint });
      const lent = new EtcdLockBackend({ client: borrowed });
      const holder = lockRequest('closed-client');
      const first = (await backend.tryAcquire(holder))!;
      const waiting = track(lent.acquire(lockRequest('closed-client'), never()));
      await queued(admin, 'closed-client', 2);
      borrowed.close();
      // The holder's release wakes the waiter, whose reads now all fail the same way.
      await backend.release(held(holder, first));
      const error = await within(
        waiting.promise.catch((caught: unknown) => caught),
        10_000,
        'the queued acquire failed',
      );
      expect(error).toBeInstanceOf(LockBackendError);
      expect((error as Error).message).toMatch(/client passed to the backend was closed while this call waited/);
      expect((error as Error).message).toMatch(/close a client you passed in only after the LockService/);
      await lent.close();
    });

    it('never closes a client the application passed in', async () => {
      const borrowed = new Etcd3({ hosts: server.endpoint });
      const lent = new EtcdLockBackend({ client: borrowed });
      const request = lockRequest('borrowed');
      const grant = (await lent.tryAcquire(request))!;
      await lent.release(held(request, grant));
      await lent.close();
      await borrowed.put('still/usable').value('yes');
      expect(await borrowed.get('still/usable').string()).toBe('yes');
      borrowed.close();
    });
  });

  describe('construction', () => {
    it('is kind "etcd" and names its hosts without credentials', async () => {
      const own = new EtcdLockBackend({ hosts: ['http://user:secret@127.0.0.1:1', '127.0.0.1:2'] });
      expect(own.kind).toBe('etcd');
      expect(own.address).toBe('http://127.0.0.1:1,127.0.0.1:2');
      await own.close();
      expect(backend.address).toBe(server.endpoint);
    });

    it('refuses missing or empty hosts with a TypeError saying what to pass (found from outside: a TypeError from inside etcd3)', () => {
      expect(() => new EtcdLockBackend({} as never)).toThrow(/EtcdLockBackend needs hosts \(or a client\), got none/);
      expect(() => new EtcdLockBackend({ hosts: '' })).toThrow(/needs hosts/);
      expect(() => new EtcdLockBackend({ hosts: [] })).toThrow(/needs hosts/);
    });

    it('takes hosts separated by commas, as ETCDCTL_ENDPOINTS does, and uses the one that answers', async () => {
      const own = new EtcdLockBackend({ hosts: `http://127.0.0.1:1, ${server.endpoint}` });
      try {
        expect(own.address).toBe(`http://127.0.0.1:1,${server.endpoint}`);
        for (let call = 0; call < 3; call++) expect(await own.isLocked(NAMESPACE, 'comma-hosts')).toBe(false);
      } finally {
        await own.close();
      }
    });

    it('refuses a namespaced client, whose raw calls would bypass its prefix', () => {
      expect(() => new EtcdLockBackend({ client: client.namespace('app/') as unknown as Etcd3 })).toThrow(
        /root Etcd3 client/,
      );
    });
  });

  describe('when etcd does not answer', () => {
    it('rejects an acquire whose deadline passes during a server call with a LockBackendError, and cleans up after', async () => {
      const own = new EtcdLockBackend({ hosts: server.endpoint });
      // Warm the connection so the request below really waits on the paused server.
      expect(await own.isLocked(NAMESPACE, 'paused')).toBe(false);
      server.pause();
      try {
        const deadline = new AbortController();
        const waiting = own.acquire(lockRequest('paused'), deadline.signal);
        setTimeout(() => deadline.abort(new Error('waitTimeout')), 300).unref();
        await expect(waiting).rejects.toBeInstanceOf(LockBackendError);
      } finally {
        server.resume();
      }
      // The grant and put landed after we gave up; the abandoned lease is revoked once etcd answers.
      await eventually(async () => (await contenders(admin, 'paused')).length === 0, 'nothing is left under the lock');
      await own.close();
    });

    it("gives a caller who cancels an acquire during a stall their own reason, not the backend's", async () => {
      const own = new EtcdLockBackend({ hosts: server.endpoint });
      const locks = new LockService(own, { keyPrefix: NAMESPACE });
      expect(await locks.isLocked('paused-cancel')).toBe(false);
      server.pause();
      try {
        const controller = new AbortController();
        const reason = new Error('the caller gave up');
        const acquiring = locks.acquire('paused-cancel', { waitTimeout: 10_000, signal: controller.signal });
        setTimeout(() => controller.abort(reason), 300).unref();
        await expect(acquiring).rejects.toBe(reason);
      } finally {
        server.resume();
      }
      await eventually(
        async () => (await contenders(admin, 'paused-cancel')).length === 0,
        'nothing is left under the lock',
      );
      await locks.close();
      await own.close();
    });

    it('grants again as soon as etcd answers after a stall in which three releases went unanswered', async () => {
      // A gRPC deadline on those deletes would count as three host failures for etcd3's circuit breaker, which then
      // refuses every call (this acquire too) for 5 s after etcd is back.
      const own = new EtcdLockBackend({ hosts: server.endpoint });
      try {
        const requests = [1, 2, 3].map((index) => lockRequest(`stalled-${index}`, 20_000));
        const grants = await Promise.all(requests.map((request) => own.tryAcquire(request)));
        server.pause();
        let releases: PromiseSettledResult<boolean>[];
        try {
          releases = await Promise.allSettled(
            requests.map((request, index) => own.release(held(request, grants[index]!))),
          );
        } finally {
          server.resume();
        }
        expect(releases.map((release) => release.status)).toEqual(['rejected', 'rejected', 'rejected']);

        const next = lockRequest('after-stall');
        const grant = await own.tryAcquire(next);
        expect(grant).not.toBeNull();
        await own.release(held(next, grant!));
        // The deletes were not abandoned: etcd applies them once it runs again.
        await eventually(
          async () =>
            (await Promise.all(requests.map(({ key }) => contenders(admin, key)))).every((keys) => keys.length === 0),
          'the stalled releases deleted their keys',
        );
      } finally {
        server.resume();
        await own.close();
      }
    }, 30_000);

    it('keeps its place in the queue across an etcd restart', async () => {
      const holder = lockRequest('restart', 20_000);
      const first = (await backend.tryAcquire(holder))!;
      const request = lockRequest('restart', 20_000);
      const waiting = track(backend.acquire(request, never()));
      await queued(admin, 'restart', 2);
      const [, queuedKey] = await contenders(admin, 'restart');

      await server.restart();
      // The first calls after a restart may fail while etcd3 reconnects; the test retries, like the core.
      await eventually(
        () =>
          backend.release(held(holder, first)).then(
            () => true,
            () => false,
          ),
        'the holder released after the restart',
        30_000,
      );
      const grant = await waiting.promise;
      expect(stateOf(grant).keyPath).toBe(queuedKey.key.toString());
      await backend.release(held(request, grant));
    });
  });
});
