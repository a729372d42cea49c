import { Etcd3 } from 'etcd3';
import type { LockGrant } from '../../lib/backends/lock-backend.interface';
import { EtcdLockBackend } from '../../lib/backends/etcd/etcd-lock.backend';
import { startEtcd, type TestEtcdServer } from '../support/etcd-server';
import {
  contenderKeys,
  contenders,
  eventually,
  held,
  lockRequest,
  queued,
  stateOf,
  track,
  watchedKeys,
  never,
} from './etcd-spec-helpers';

describe('EtcdLockBackend queue', () => {
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

  it('grants waiters in FIFO order of their create revisions', async () => {
    const holder = lockRequest('fifo');
    const first = (await backend.tryAcquire(holder))!;
    const order: number[] = [];
    const tokens: bigint[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 1; i <= 5; i++) {
      const request = lockRequest('fifo');
      waiters.push(
        backend.acquire(request, never()).then(async (grant) => {
          order.push(i);
          tokens.push(grant.fencingToken);
          await backend.release(held(request, grant));
        }),
      );
      await queued(client, 'fifo', i + 1);
    }
    await backend.release(held(holder, first));
    await Promise.all(waiters);
    expect(order).toEqual([1, 2, 3, 4, 5]);
    expect([...tokens].sort((a, b) => (a < b ? -1 : 1))).toEqual(tokens);
    expect(await contenders(client, 'fifo')).toEqual([]);
  });

  it('has each waiter watch only its predecessor, so a release wakes just the next one', async () => {
    await eventually(() => watchedKeys(client).length === 0, 'earlier tests’ watchers are gone');
    const holder = lockRequest('herd');
    const first = (await backend.tryAcquire(holder))!;
    const requests = [1, 2, 3].map(() => lockRequest('herd'));
    const grants: Promise<LockGrant>[] = [];
    for (const [i, request] of requests.entries()) {
      grants.push(backend.acquire(request, never()));
      await queued(client, 'herd', i + 2);
    }
    const [h, w1, w2] = await contenderKeys(client, 'herd');
    await eventually(() => watchedKeys(client).length === 3, 'three watchers are attached');
    expect(watchedKeys(client)).toEqual([h, w1, w2].sort());
    const manager = (client as unknown as { watchManager: { watchers: object[] } }).watchManager;
    const laterWatchers = manager.watchers.filter(
      (w) => (w as { request: { key: Buffer } }).request.key.toString() !== h,
    );

    await backend.release(held(holder, first));
    const grant1 = await grants[0];
    expect(stateOf(grant1).keyPath).toBe(w1);
    // Waiters 2 and 3 were not woken: their watchers are the very same objects, still on their predecessors.
    await eventually(() => !watchedKeys(client).includes(h), 'the first waiter’s watch is cancelled');
    expect(watchedKeys(client)).toEqual([w1, w2].sort());
    expect(laterWatchers.every((watcher) => manager.watchers.includes(watcher))).toBe(true);

    await backend.release(held(requests[0], grant1));
    const grant2 = await grants[1];
    await backend.release(held(requests[1], grant2));
    await backend.release(held(requests[2], await grants[2]));
    await eventually(() => watchedKeys(client).length === 0, 'every watcher is cancelled');
  });

  it('passes the lock on when a waiter leaves the queue without ever owning it', async () => {
    const holder = lockRequest('leaver');
    const first = (await backend.tryAcquire(holder))!;
    const leaving = new AbortController();
    const leaver = track(backend.acquire(lockRequest('leaver'), leaving.signal));
    await queued(client, 'leaver', 2);
    const request = lockRequest('leaver');
    const next = track(backend.acquire(request, never()));
    await queued(client, 'leaver', 3);
    const [h, w1] = await contenderKeys(client, 'leaver');

    const reason = new Error('gave up');
    leaving.abort(reason);
    await expect(leaver.promise).rejects.toBe(reason);
    await queued(client, 'leaver', 2);
    // The next waiter woke on its predecessor's deletion, re-read, and now watches the holder instead.
    await eventually(
      () => watchedKeys(client).includes(h) && !watchedKeys(client).includes(w1),
      'the waiter watches the holder',
    );
    expect(next.settled()).toBe(false);

    await backend.release(held(holder, first));
    const grant = await next.promise;
    expect(await contenderKeys(client, 'leaver')).toEqual([stateOf(grant).keyPath]);
    await backend.release(held(request, grant));
  });

  it('rejoins with a fresh lease when its own lease was revoked while queued (etcd#11456), never claiming the vanished key', async () => {
    const holder = lockRequest('revoked');
    const first = (await backend.tryAcquire(holder))!;
    const request = lockRequest('revoked', 3_000);
    const waiting = track(backend.acquire(request, never()));
    await queued(client, 'revoked', 2);
    const [, original] = await contenders(client, 'revoked');

    // Its lease dies, then the holder leaves at once: the waiter wakes up (on the holder's deletion, or on
    // its keepalive, whichever comes first) to a key that is gone, and must not claim it.
    await admin.leaseClient.leaseRevoke({ ID: original.lease });
    await backend.release(held(holder, first));
    const grant = await waiting.promise;
    const state = stateOf(grant);
    expect(state.keyPath).not.toBe(original.key.toString());
    expect(state.leaseId).not.toBe(original.lease);
    expect(grant.fencingToken).toBeGreaterThan(BigInt(original.create_revision));
    const [kv] = await contenders(client, 'revoked');
    expect(kv.key.toString()).toBe(state.keyPath);
    expect(kv.value.toString().split(' ')[0]).toBe(request.token);
    await backend.release(held(request, grant));
  });

  it('notices a revoked lease while still waiting behind a holder, and queues again', async () => {
    const holder = lockRequest('revoked-wait');
    const first = (await backend.tryAcquire(holder))!;
    const request = lockRequest('revoked-wait', 3_000);
    const waiting = track(backend.acquire(request, never()));
    await queued(client, 'revoked-wait', 2);
    const [h, original] = await contenders(client, 'revoked-wait');

    await admin.leaseClient.leaseRevoke({ ID: original.lease });
    // The keepalive (every TTL/3) finds the lease gone and the waiter joins again behind the holder.
    await eventually(async () => {
      const keys = await contenderKeys(client, 'revoked-wait');
      return keys.length === 2 && keys[1] !== original.key.toString();
    }, 'the waiter queued again');
    expect((await contenderKeys(client, 'revoked-wait'))[0]).toBe(h.key.toString());
    expect(waiting.settled()).toBe(false);

    await backend.release(held(holder, first));
    const grant = await waiting.promise;
    await backend.release(held(request, grant));
  });

  it('keeps a waiter’s lease alive while it waits longer than its TTL', async () => {
    const holder = lockRequest('long-wait', 30_000);
    const first = (await backend.tryAcquire(holder))!;
    const request = lockRequest('long-wait', 1_000);
    const waiting = track(backend.acquire(request, never()));
    await queued(client, 'long-wait', 2);
    const [, queuedKey] = await contenderKeys(client, 'long-wait');
    const lease = (await contenders(client, 'long-wait'))[1].lease;
    const granted = Number((await admin.leaseClient.leaseTimeToLive({ ID: lease })).grantedTTL);
    // Wait past the lease's TTL; without keepalives its key would be gone.
    await new Promise((resolve) => setTimeout(resolve, granted * 1000 + 1_000));
    expect(await contenderKeys(client, 'long-wait')).toEqual([expect.any(String), queuedKey]);

    await backend.release(held(holder, first));
    const grant = await waiting.promise;
    expect(stateOf(grant).keyPath).toBe(queuedKey);
    await backend.release(held(request, grant));
  });

  it('is not stuck when the history is compacted during the wait', async () => {
    const holder = lockRequest('compacted');
    const first = (await backend.tryAcquire(holder))!;
    const request = lockRequest('compacted');
    const waiting = track(backend.acquire(request, never()));
    await queued(client, 'compacted', 2);
    for (let i = 0; i < 10; i++) await admin.put(`noise/${i}`).value(String(i));
    const now = (await admin.kv.range({ key: Buffer.from('noise/0') })).header.revision;
    await admin.kv.compact({ revision: now, physical: true });

    await backend.release(held(holder, first));
    const grant = await waiting.promise;
    await backend.release(held(request, grant));
  });

  /** The backend's client wrapper, with `inspect` (the waiter's read) and `watchDeletion` replaceable. */
  function spiedEtcd() {
    const etcd = (
      backend as unknown as {
        etcd: {
          inspect: (...args: unknown[]) => Promise<{ revision?: bigint; blocker?: unknown }>;
          watchDeletion: (...args: unknown[]) => { fired: Promise<string> };
        };
      }
    ).etcd;
    const { inspect, watchDeletion } = etcd;
    const restore = () => Object.assign(etcd, { inspect, watchDeletion });
    return { etcd, inspect, watchDeletion, restore };
  }

  it('reads again when the server moved past its read before its watch started, and misses no release', async () => {
    // The holder releases between the waiter's read and its watch: a watch from the current revision cannot
    // see that delete, so only the read after it (the watch starts past the first read) finds the lock free.
    const { etcd, inspect, restore } = spiedEtcd();
    const holder = lockRequest('released-in-gap');
    const first = (await backend.tryAcquire(holder))!;
    let reads = 0;
    let released = false;
    etcd.inspect = async (...args: unknown[]) => {
      const seen = await inspect.apply(etcd, args);
      reads++;
      if (!released && seen.blocker !== undefined) {
        released = true;
        await backend.release(held(holder, first));
      }
      return seen;
    };
    try {
      const request = lockRequest('released-in-gap');
      const grant = await backend.acquire(request, never());
      expect(released).toBe(true);
      expect(reads).toBe(2);
      expect(grant.fencingToken).toBeGreaterThan(first.fencingToken);
      await backend.release(held(request, grant));
    } finally {
      restore();
    }
  });

  it('keeps its watch when it reads again after other writes, and wakes on the release', async () => {
    const { etcd, inspect, watchDeletion, restore } = spiedEtcd();
    let reads = 0;
    let noise = 0;
    const watches: string[] = [];
    etcd.inspect = async (...args: unknown[]) => {
      const seen = await inspect.apply(etcd, args);
      reads++;
      // Writes elsewhere between the first read and the watch: the server's revision moves past the read.
      if (reads === 1 && seen.blocker !== undefined)
        for (; noise < 3; noise++) await admin.put(`noise/gap/${noise}`).value('x');
      return seen;
    };
    etcd.watchDeletion = (...args: unknown[]) => {
      const watch = watchDeletion.apply(etcd, args);
      void watch.fired.then((reason) => watches.push(reason));
      watches.push('watch');
      return watch;
    };
    try {
      const holder = lockRequest('writes-in-gap');
      const first = (await backend.tryAcquire(holder))!;
      const request = lockRequest('writes-in-gap');
      const waiting = track(backend.acquire(request, never()));
      await eventually(() => reads === 2, 'the waiter read again');
      const [h] = await contenderKeys(client, 'writes-in-gap');
      expect(watchedKeys(client)).toContain(h);
      expect(waiting.settled()).toBe(false);
      await backend.release(held(holder, first));
      const grant = await waiting.promise;
      // One watch for the whole wait, woken by the release; one read after it, which finds the lock ours.
      expect(watches).toEqual(['watch', 'deleted']);
      expect(reads).toBe(3);
      await backend.release(held(request, grant));
    } finally {
      restore();
    }
  });

  it('tryAcquire fails while anyone holds or queues, and leaves nothing behind', async () => {
    const holder = lockRequest('try');
    const first = (await backend.tryAcquire(holder))!;
    expect(await backend.tryAcquire(lockRequest('try'))).toBeNull();
    expect(await contenders(client, 'try')).toHaveLength(1);

    await backend.release(held(holder, first));
    const again = lockRequest('try');
    const second = (await backend.tryAcquire(again))!;
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    await backend.release(held(again, second));
  });

  it('rejects with the signal’s reason and leaves the queue when the wait is aborted', async () => {
    const holder = lockRequest('abort');
    const first = (await backend.tryAcquire(holder))!;
    const controller = new AbortController();
    const waiting = backend.acquire(lockRequest('abort'), controller.signal);
    await queued(client, 'abort', 2);
    const reason = new Error('waitTimeout');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    await queued(client, 'abort', 1);
    await backend.release(held(holder, first));
  });

  it('rejects at once with an already aborted signal', async () => {
    const controller = new AbortController();
    const reason = new Error('too late');
    controller.abort(reason);
    await expect(backend.acquire(lockRequest('pre-aborted'), controller.signal)).rejects.toBe(reason);
    expect(await contenders(client, 'pre-aborted')).toEqual([]);
  });
});
