import { Etcd3, IKeyValue } from 'etcd3';
import type { AcquireRequest, LockGrant } from '../../lib/backends/lock-backend.interface';
import { lockPrefix, prefixRangeEnd, semaphorePrefix } from '../../lib/backends/etcd/etcd-key-layout';
import { EtcdLockBackend } from '../../lib/backends/etcd/etcd-lock.backend';
import { startEtcd, type TestEtcdServer } from '../support/etcd-server';
import { lastValueFrom } from 'rxjs';
import { LockLostError } from '../../lib/errors';
import { LockService } from '../../lib/lock.service';
import { outcome } from '../support/time';
import {
  contenderKeys,
  contenders,
  eventually,
  held,
  lockRequest,
  NAMESPACE,
  queued,
  stateOf,
  track,
  watchedKeys,
  watchesCreated,
  never,
} from './etcd-spec-helpers';

const reader = (key: string, ttl?: number): AcquireRequest => ({ ...lockRequest(key, ttl), mode: 'read' });
const writer = (key: string, ttl?: number): AcquireRequest => ({ ...lockRequest(key, ttl), mode: 'write' });
const permit = (key: string, permits: number, ttl?: number): AcquireRequest => ({ ...lockRequest(key, ttl), permits });

/** Holders and waiters of a semaphore, oldest first. */
async function semaphoreEntries(client: Etcd3, key: string): Promise<IKeyValue[]> {
  const start = Buffer.from(semaphorePrefix(NAMESPACE, key));
  return (await client.kv.range({ key: start, range_end: prefixRangeEnd(start), sort_target: 2, sort_order: 1 })).kvs;
}

function semaphoreQueued(client: Etcd3, key: string, count: number): Promise<void> {
  return eventually(
    async () => (await semaphoreEntries(client, key)).length === count,
    `${count} entries on semaphore "${key}"`,
  );
}

describe('EtcdLockBackend read/write locks and semaphores', () => {
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

  /** Counts the backend's queue re-reads per contender key, to prove who was woken. */
  function countInspections(): { of(key: string): number; restore(): void } {
    const etcd = (
      backend as unknown as { etcd: { inspect: (rules: unknown, key: string, revision: bigint) => Promise<unknown> } }
    ).etcd;
    const original = etcd.inspect;
    const counts = new Map<string, number>();
    etcd.inspect = (rules, key, revision) => {
      counts.set(key, (counts.get(key) ?? 0) + 1);
      return original.call(etcd, rules, key, revision);
    };
    return { of: (key) => counts.get(key) ?? 0, restore: () => void (etcd.inspect = original) };
  }

  it('declares read/write locks and semaphores', () => {
    expect(backend.supports).toEqual({ readWrite: true, semaphore: true, expiry: false, lockDelay: true });
  });

  describe('read/write locks', () => {
    it('keys a reader <ns>/<enc(key)>/r-<lease hex> in the lock’s own range, and a writer exactly like an exclusive lock', async () => {
      const r = reader('doc/1');
      const rGrant = (await backend.tryAcquire(r))!;
      const rState = stateOf(rGrant);
      expect(rState.keyPath).toBe(`${lockPrefix(NAMESPACE, 'doc/1')}r-${BigInt(rState.leaseId).toString(16)}`);
      expect(rState.keyPath).toBe(`locks/doc%2F1/r-${BigInt(rState.leaseId).toString(16)}`);
      expect(rGrant.fencingToken).toBe(BigInt(rState.createRevision));
      expect(await backend.isLocked(NAMESPACE, 'doc/1')).toBe(true);
      await backend.release(held(r, rGrant));

      const w = writer('doc/1');
      const wGrant = (await backend.tryAcquire(w))!;
      expect(stateOf(wGrant).keyPath).toBe(`locks/doc%2F1/${BigInt(stateOf(wGrant).leaseId).toString(16)}`);
      expect(wGrant.fencingToken).toBeGreaterThan(rGrant.fencingToken);
      await backend.release(held(w, wGrant));
      expect(await backend.isLocked(NAMESPACE, 'doc/1')).toBe(false);
    });

    it('lets readers share, keeps writers and exclusive lockers out, and takes exclusive and write for one lock', async () => {
      const readers = [reader('share'), reader('share'), reader('share')];
      const grants = await Promise.all(readers.map((request) => backend.tryAcquire(request)));
      expect(grants.every((grant) => grant !== null)).toBe(true);
      expect(await backend.tryAcquire(writer('share'))).toBeNull();
      expect(await backend.tryAcquire(lockRequest('share'))).toBeNull();
      await Promise.all(readers.map((request, i) => backend.release(held(request, grants[i]!))));

      const exclusive = lockRequest('share');
      const exclusiveGrant = (await backend.tryAcquire(exclusive))!;
      expect(await backend.tryAcquire(writer('share'))).toBeNull();
      expect(await backend.tryAcquire(reader('share'))).toBeNull();
      await backend.release(held(exclusive, exclusiveGrant));
      // tryAcquire left nothing behind.
      expect(await contenderKeys(client, 'share')).toEqual([]);
    });

    it('queues a writer behind readers on its immediate predecessor, and later readers on that writer only', async () => {
      await eventually(() => watchedKeys(client).length === 0, 'earlier tests’ watchers are gone');
      const r1 = reader('rw-queue');
      const r2 = reader('rw-queue');
      const [g1, g2] = [(await backend.tryAcquire(r1))!, (await backend.tryAcquire(r2))!];
      const w = writer('rw-queue');
      const writing = track(backend.acquire(w, never()));
      await queued(client, 'rw-queue', 3);
      const late = [reader('rw-queue'), reader('rw-queue')];
      const lateReads = late.map((request) => track(backend.acquire(request, never())));
      await queued(client, 'rw-queue', 5);
      const [k1, k2, kw] = await contenderKeys(client, 'rw-queue');
      expect(kw).not.toContain('/r-');

      // The writer watches the last reader before it; both late readers watch the writer, not the readers.
      await eventually(() => watchedKeys(client).length === 3, 'three watchers are attached');
      expect(watchedKeys(client)).toEqual([k2, kw, kw].sort());
      await backend.release(held(r2, g2));
      await eventually(
        () => watchedKeys(client).includes(k1) && !watchedKeys(client).includes(k2),
        'the writer watches r1',
      );
      expect(writing.settled()).toBe(false);
      await backend.release(held(r1, g1));

      const wGrant = await writing.promise;
      expect(lateReads.some((read) => read.settled())).toBe(false);
      await backend.release(held(w, wGrant));
      const lateGrants = await Promise.all(lateReads.map((read) => read.promise));
      expect(lateGrants.every((grant) => grant.fencingToken > wGrant.fencingToken)).toBe(true);
      await Promise.all(late.map((request, i) => backend.release(held(request, lateGrants[i]))));
      await eventually(() => watchedKeys(client).length === 0, 'every watcher is cancelled');
    });

    it('lets a reader in as soon as the writer it waits behind gives up, while earlier readers still hold', async () => {
      const first = reader('gave-up');
      const firstGrant = (await backend.tryAcquire(first))!;
      const leaving = new AbortController();
      const giving = track(backend.acquire(writer('gave-up'), leaving.signal));
      await queued(client, 'gave-up', 2);
      const late = reader('gave-up');
      const lateRead = track(backend.acquire(late, never()));
      await queued(client, 'gave-up', 3);
      expect(lateRead.settled()).toBe(false);

      const reason = new Error('writer timed out');
      leaving.abort(reason);
      await expect(giving.promise).rejects.toBe(reason);
      const lateGrant = await lateRead.promise;
      await backend.release(held(late, lateGrant));
      await backend.release(held(first, firstGrant));
    });

    it('re-derives its blocker when the nearest writer leaves but an earlier writer still holds', async () => {
      const w1 = writer('two-writers');
      const w1Grant = (await backend.tryAcquire(w1))!;
      const leaving = new AbortController();
      const w2 = track(backend.acquire(writer('two-writers'), leaving.signal));
      await queued(client, 'two-writers', 2);
      const r = reader('two-writers');
      const reading = track(backend.acquire(r, never()));
      await queued(client, 'two-writers', 3);
      const [k1] = await contenderKeys(client, 'two-writers');

      leaving.abort(new Error('gave up'));
      await expect(w2.promise).rejects.toThrow('gave up');
      await eventually(() => watchedKeys(client).includes(k1), 'the reader watches the first writer now');
      expect(reading.settled()).toBe(false);
      await backend.release(held(w1, w1Grant));
      await backend.release(held(r, await reading.promise));
    });

    it('rejoins with a fresh reader key when its lease was revoked while it waited behind a writer (etcd#11456)', async () => {
      const w = writer('reader-revoked');
      const wGrant = (await backend.tryAcquire(w))!;
      const r = reader('reader-revoked', 3_000);
      const reading = track(backend.acquire(r, never()));
      await queued(client, 'reader-revoked', 2);
      const [, queuedKv] = await contenders(client, 'reader-revoked');
      const original = queuedKv.key.toString();

      await admin.leaseClient.leaseRevoke({ ID: queuedKv.lease });
      await eventually(async () => {
        const keys = await contenderKeys(client, 'reader-revoked');
        return keys.length === 2 && keys[1] !== original && keys[1].includes('/r-');
      }, 'the reader queued again');
      expect(reading.settled()).toBe(false);
      await backend.release(held(w, wGrant));
      const grant = await reading.promise;
      expect(stateOf(grant).keyPath).not.toBe(original);
      await backend.release(held(r, grant));
    });

    it('errors a held read lock’s renewals$ when a raw client revokes its lease', async () => {
      // Not closed afterwards: it would close the suite's backend. Releasing its one lock is enough.
      const locks = new LockService(backend, { keyPrefix: NAMESPACE });
      const lock = await locks.acquire('raw-revoke', { mode: 'read', ttl: 2_000 });
      const ended = outcome(lastValueFrom(lock.renewals$, { defaultValue: undefined }));
      const [kv] = await contenders(admin, 'raw-revoke');
      await admin.leaseClient.leaseRevoke({ ID: kv.lease });
      const { error } = await ended;
      expect(error).toBeInstanceOf(LockLostError);
      expect(lock.signal.aborted).toBe(true);
      await lock.release();
    });

    it('treats a Go Mutex / etcdctl key as a writer, and makes a Go Mutex count our readers as contenders', async () => {
      const lease = await admin.leaseClient.leaseGrant({ TTL: 10 });
      const goKey = `${lockPrefix(NAMESPACE, 'go-rw')}${BigInt(lease.ID).toString(16)}`;
      await admin.put(goKey).value('').lease(lease.ID).exec();
      expect(await backend.tryAcquire(reader('go-rw'))).toBeNull();
      const r = reader('go-rw');
      const reading = track(backend.acquire(r, never()));
      await queued(client, 'go-rw', 2);
      expect(reading.settled()).toBe(false);
      await admin.leaseClient.leaseRevoke({ ID: lease.ID });
      const grant = await reading.promise;

      // Go's Mutex.Lock waits until no key under the prefix has a lower create revision than its own.
      const goLease = await admin.leaseClient.leaseGrant({ TTL: 10 });
      const goLater = `${lockPrefix(NAMESPACE, 'go-rw')}${BigInt(goLease.ID).toString(16)}`;
      await admin.put(goLater).value('').lease(goLease.ID).exec();
      const [ourKey, theirs] = await contenderKeys(client, 'go-rw');
      expect([ourKey, theirs]).toEqual([stateOf(grant).keyPath, goLater]);
      await backend.release(held(r, grant));
      await admin.leaseClient.leaseRevoke({ ID: goLease.ID });
    });
  });

  describe('joining while etcd fails over', () => {
    type Internals = {
      etcd: {
        grant: (ttlSeconds: number) => Promise<{ id: string; ttlSeconds: number }>;
        enqueue: (
          rules: unknown,
          key: string,
          token: string,
          leaseId: string,
        ) => Promise<{ createRevision: bigint; holds: boolean | undefined }>;
      };
    };
    const internals = () => (backend as unknown as Internals).etcd;

    it('adopts its own key when a retried put finds it already there (the first answer was lost)', async () => {
      const etcd = internals();
      const original = etcd.enqueue;
      // What etcd3's retry does after a lost answer: the same txn twice. We only see the second answer.
      etcd.enqueue = async (...args) => {
        const first = await original.apply(etcd, args);
        const second = await original.apply(etcd, args);
        expect(second).toEqual({ createRevision: first.createRevision, holds: undefined });
        return second;
      };
      try {
        const w = writer('retried-put');
        const grant = (await backend.tryAcquire(w))!;
        expect(grant.fencingToken).toBe(BigInt(stateOf(grant).createRevision));
        expect(await backend.tryAcquire(reader('retried-put'))).toBeNull();
        const r = reader('retried-put');
        const reading = track(backend.acquire(r, never()));
        await queued(client, 'retried-put', 2);
        await backend.release(held(w, grant));
        await backend.release(held(r, await reading.promise));
        expect(await contenderKeys(client, 'retried-put')).toEqual([]);
      } finally {
        etcd.enqueue = original;
      }
    });

    it('takes a fresh lease when the one it just granted expired before its key was put', async () => {
      const etcd = internals();
      const original = etcd.grant;
      const lost: string[] = [];
      etcd.grant = async (ttlSeconds) => {
        const lease = await original.call(etcd, ttlSeconds);
        if (lost.length === 0) {
          lost.push(lease.id);
          await admin.leaseClient.leaseRevoke({ ID: lease.id });
        }
        return lease;
      };
      try {
        const request = permit('expired-lease', 1);
        const grant = await backend.acquire(request, never());
        expect(stateOf(grant).leaseId).not.toBe(lost[0]);
        await backend.release(held(request, grant));
      } finally {
        etcd.grant = original;
      }
    });
  });

  describe('semaphores', () => {
    it('keys a permit <ns>/%semaphore/<enc(key)>/<lease hex>, apart from the lock of the same name', async () => {
      const request = permit('exports/daily', 2);
      const grant = (await backend.tryAcquire(request))!;
      const state = stateOf(grant);
      expect(state.keyPath).toBe(`locks/%semaphore/exports%2Fdaily/${BigInt(state.leaseId).toString(16)}`);
      expect(grant.fencingToken).toBe(BigInt(state.createRevision));
      // The lock "exports/daily" is free, and "%semaphore" as a user key cannot reach the semaphore's range.
      expect(await backend.isLocked(NAMESPACE, 'exports/daily')).toBe(false);
      const lock = lockRequest('exports/daily');
      const lockGrant = (await backend.tryAcquire(lock))!;
      expect(lockGrant).not.toBeNull();
      expect(lockPrefix(NAMESPACE, '%semaphore/exports/daily')).toBe('locks/%25semaphore%2Fexports%2Fdaily/');
      await backend.release(held(lock, lockGrant));
      await backend.release(held(request, grant));
      expect(await semaphoreEntries(admin, 'exports/daily')).toEqual([]);
    });

    it('admits the first `permits` and makes tryAcquire fail beyond them, leaving nothing behind', async () => {
      const holders = [permit('three', 3), permit('three', 3), permit('three', 3)];
      const grants = await Promise.all(holders.map((request) => backend.tryAcquire(request)));
      expect(grants.every((grant) => grant !== null)).toBe(true);
      expect(await backend.tryAcquire(permit('three', 3))).toBeNull();
      expect(await semaphoreEntries(admin, 'three')).toHaveLength(3);
      await backend.release(held(holders[1], grants[1]!));
      const fourth = permit('three', 3);
      const fourthGrant = (await backend.tryAcquire(fourth))!;
      expect(fourthGrant.fencingToken).toBeGreaterThan(grants[2]!.fencingToken);
      for (const [request, grant] of [
        [holders[0], grants[0]!],
        [holders[2], grants[2]!],
        [fourth, fourthGrant],
      ] as const) {
        await backend.release(held(request, grant));
      }
    });

    it('wakes only the waiter a released permit can admit, whichever holder releases', async () => {
      const holders = [permit('herd', 2), permit('herd', 2)];
      const grants = (await Promise.all(holders.map((request) => backend.tryAcquire(request)))) as LockGrant[];
      const waiters = [permit('herd', 2), permit('herd', 2), permit('herd', 2)];
      const waits = [];
      for (const [i, request] of waiters.entries()) {
        waits.push(track(backend.acquire(request, never())));
        await semaphoreQueued(admin, 'herd', 3 + i);
        await watchesCreated(client, semaphorePrefix(NAMESPACE, 'herd'), 1 + i);
      }
      const keys = (await semaphoreEntries(admin, 'herd')).map((kv) => kv.key.toString());
      const inspections = countInspections();
      try {
        // The second holder (not the oldest) leaves: the first waiter is in, the others did not even re-read.
        await backend.release(held(holders[1], grants[1]));
        const first = await waits[0].promise;
        expect(stateOf(first).keyPath).toBe(keys[2]);
        expect(inspections.of(keys[2])).toBe(1);
        expect(inspections.of(keys[3])).toBe(0);
        expect(inspections.of(keys[4])).toBe(0);
        expect(waits[1].settled() || waits[2].settled()).toBe(false);

        await backend.release(held(holders[0], grants[0]));
        const second = await waits[1].promise;
        expect(inspections.of(keys[4])).toBe(0);
        await backend.release(held(waiters[0], first));
        const third = await waits[2].promise;
        await backend.release(held(waiters[1], second));
        await backend.release(held(waiters[2], third));
      } finally {
        inspections.restore();
      }
    });

    it('does not count later waiters leaving, and does count earlier ones', async () => {
      const holder = permit('leavers', 1);
      const holderGrant = (await backend.tryAcquire(holder))!;
      const earlyLeaving = new AbortController();
      const early = track(backend.acquire(permit('leavers', 1), earlyLeaving.signal));
      await semaphoreQueued(admin, 'leavers', 2);
      await watchesCreated(client, semaphorePrefix(NAMESPACE, 'leavers'), 1);
      const middle = permit('leavers', 1);
      const waiting = track(backend.acquire(middle, never()));
      await semaphoreQueued(admin, 'leavers', 3);
      await watchesCreated(client, semaphorePrefix(NAMESPACE, 'leavers'), 2);
      const lateLeaving = new AbortController();
      const late = track(backend.acquire(permit('leavers', 1), lateLeaving.signal));
      await semaphoreQueued(admin, 'leavers', 4);
      await watchesCreated(client, semaphorePrefix(NAMESPACE, 'leavers'), 3);
      const middleKey = (await semaphoreEntries(admin, 'leavers'))[2].key.toString();

      const inspections = countInspections();
      try {
        lateLeaving.abort(new Error('late gave up'));
        await expect(late.promise).rejects.toThrow('late gave up');
        await semaphoreQueued(admin, 'leavers', 3);
        earlyLeaving.abort(new Error('early gave up'));
        await expect(early.promise).rejects.toThrow('early gave up');
        await semaphoreQueued(admin, 'leavers', 2);
        // It needs two earlier keys to go (holder and early waiter): one did, so it has not even re-read.
        expect(inspections.of(middleKey)).toBe(0);
        expect(waiting.settled()).toBe(false);
        // The holder is the second: had the early waiter not counted, it would still be waiting.
        await backend.release(held(holder, holderGrant));
        await backend.release(held(middle, await waiting.promise));
        expect(inspections.of(middleKey)).toBe(1);
      } finally {
        inspections.restore();
      }
    });

    it('frees the permit of a holder that stopped renewing after its lease ttl', async () => {
      const crashed = permit('crash', 1, 1_000);
      const crashedGrant = (await backend.tryAcquire(crashed))!;
      const lease = stateOf(crashedGrant).leaseId;
      const ttl = Number((await admin.leaseClient.leaseTimeToLive({ ID: lease })).grantedTTL);
      const started = performance.now();
      const next = permit('crash', 1);
      const grant = await backend.acquire(next, never());
      // Not before the lease could expire, and not long after (the server checks expiry every 500 ms).
      expect(performance.now() - started).toBeLessThan(ttl * 1000 + 5_000);
      expect(grant.fencingToken).toBeGreaterThan(crashedGrant.fencingToken);
      expect((await semaphoreEntries(admin, 'crash')).map((kv) => kv.key.toString())).toEqual([stateOf(grant).keyPath]);
      await backend.release(held(next, grant));
    });
  });
});
