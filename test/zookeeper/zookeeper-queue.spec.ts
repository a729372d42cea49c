import type { LockGrant } from '../../lib/backends/lock-backend.interface';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper-lock.backend';
import { lockPath } from '../../lib/backends/zookeeper/zookeeper-node-layout';
import { LockBackendError } from '../../lib/errors';
import { startZooKeeper, TestZooKeeperServer } from '../support/zookeeper-server';
import { within } from '../support/time';
import { FaultProxy } from './fault-proxy';
import {
  AdminClient,
  armedDataWatches,
  eventually,
  held,
  isConnected,
  lockRequest,
  never,
  nodeName,
  queued,
  stateOf,
  track,
} from './zookeeper-spec-helpers';

describe('ZooKeeperLockBackend queue', () => {
  let server: TestZooKeeperServer;
  let admin: AdminClient;
  const backends: ZooKeeperLockBackend[] = [];

  const newBackend = (connectionString = server.connectionString) => {
    const backend = new ZooKeeperLockBackend({ connectionString, sessionTimeout: 10_000, spinDelay: 100 });
    backends.push(backend);
    return backend;
  };

  beforeAll(async () => {
    server = await startZooKeeper();
    admin = await AdminClient.connect(server.connectionString);
  });

  afterEach(async () => {
    await Promise.all(backends.splice(0).map((backend) => backend.close()));
  });

  afterAll(async () => {
    admin?.close();
    await server?.stop();
  });

  it("grants queued waiters in FIFO order of their sequence numbers; the fencing token is the node's czxid", async () => {
    const backend = newBackend();
    const holder = lockRequest('fifo');
    const first = (await backend.tryAcquire(holder))!;
    const order: number[] = [];
    const grants: LockGrant[] = [first];
    const waiters: Promise<void>[] = [];
    for (let i = 1; i <= 5; i++) {
      const request = lockRequest('fifo');
      // Every waiter on its own connection, like five app instances.
      const own = newBackend();
      waiters.push(
        own.acquire(request, never()).then(async (grant) => {
          order.push(i);
          grants.push(grant);
          const stat = await admin.stat(stateOf(grant).nodePath);
          expect(stat!.czxid.readBigUInt64BE(0)).toBe(grant.fencingToken);
          await own.release(held(request, grant));
        }),
      );
      await queued(admin, 'fifo', i + 1);
    }
    await backend.release(held(holder, first));
    await Promise.all(waiters);
    expect(order).toEqual([1, 2, 3, 4, 5]);
    for (let i = 1; i < grants.length; i++) expect(grants[i].fencingToken > grants[i - 1].fencingToken).toBe(true);
    expect(await admin.contenders('fifo')).toEqual([]);
  });

  it('has each waiter watch only its predecessor, so a release wakes just the next one', async () => {
    const holderBackend = newBackend();
    const holder = lockRequest('herd');
    const first = (await holderBackend.tryAcquire(holder))!;
    const waiters = [1, 2, 3].map(() => ({ backend: newBackend(), request: lockRequest('herd') }));
    const pending = [];
    for (const [i, waiter] of waiters.entries()) {
      pending.push(track(waiter.backend.acquire(waiter.request, never())));
      await queued(admin, 'herd', i + 2);
    }
    const path = (name: string) => `${lockPath('locks', 'herd')}/${name}`;
    const [h, w1, w2, w3] = (await admin.contenders('herd')).map(path);
    // Each client watches its own node (to hear of a deletion while it holds) and its predecessor, nothing else.
    await eventually(
      () => armedDataWatches(waiters[2].backend).length === 2,
      'the last waiter watches its predecessor',
    );
    expect(armedDataWatches(waiters[0].backend)).toEqual([h, w1].sort());
    expect(armedDataWatches(waiters[1].backend)).toEqual([w1, w2].sort());
    expect(armedDataWatches(waiters[2].backend)).toEqual([w2, w3].sort());

    await holderBackend.release(held(holder, first));
    const grant1 = await pending[0].promise;
    expect(stateOf(grant1).nodePath).toBe(w1);
    expect(pending[1].settled()).toBe(false);
    expect(pending[2].settled()).toBe(false);
    // The others' watches did not fire: still armed on the same predecessors.
    expect(armedDataWatches(waiters[1].backend)).toEqual([w1, w2].sort());
    expect(armedDataWatches(waiters[2].backend)).toEqual([w2, w3].sort());

    await waiters[0].backend.release(held(waiters[0].request, grant1));
    const grant2 = await pending[1].promise;
    await waiters[1].backend.release(held(waiters[1].request, grant2));
    const grant3 = await pending[2].promise;
    await waiters[2].backend.release(held(waiters[2].request, grant3));
  });

  it('a waiter whose predecessor leaves the queue without owning the lock re-lists and waits for the holder', async () => {
    const backend = newBackend();
    const holder = lockRequest('leaver');
    const first = (await backend.tryAcquire(holder))!;
    const leaver = new AbortController();
    const leaving = track(newBackend().acquire(lockRequest('leaver'), leaver.signal));
    await queued(admin, 'leaver', 2);
    const patientBackend = newBackend();
    const patient = lockRequest('leaver');
    const waiting = track(patientBackend.acquire(patient, never()));
    await queued(admin, 'leaver', 3);

    const reason = new Error('gave up');
    leaver.abort(reason);
    await expect(leaving.promise).rejects.toBe(reason);
    await queued(admin, 'leaver', 2);
    // The patient waiter's watch fired on the leaver's deletion; it now watches the holder, and still waits.
    const holderPath = stateOf(first).nodePath;
    await eventually(
      () => armedDataWatches(patientBackend).includes(holderPath),
      'the patient waiter watches the holder',
    );
    expect(waiting.settled()).toBe(false);

    await backend.release(held(holder, first));
    const grant = await waiting.promise;
    expect(grant.fencingToken > first.fencingToken).toBe(true);
    await patientBackend.release(held(patient, grant));
  });

  it('a holder granted alone watches its lock path until it changes, then its own node; a deletion is reported either way', async () => {
    const lostOf = (backend: ZooKeeperLockBackend, request: ReturnType<typeof lockRequest>, grant: LockGrant) => {
      let lost = false;
      const stop = backend.observe(held(request, grant), (event) => {
        if (event.type === 'lost') lost = true;
      });
      return { lost: () => lost, stop };
    };

    // Alone, nobody else comes: the child watch of its listing is the only watch, and it hears the deletion.
    const lonely = newBackend();
    const alone = lockRequest('alone-deleted');
    const aloneGrant = (await lonely.tryAcquire(alone))!;
    // A later request on the same session is answered after every earlier one: no read of the node was sent.
    expect(await lonely.isLocked('locks', 'alone-deleted')).toBe(true);
    expect(armedDataWatches(lonely)).toEqual([]);
    const aloneEvents = lostOf(lonely, alone, aloneGrant);
    await admin.remove(stateOf(aloneGrant).nodePath);
    await eventually(() => aloneEvents.lost(), 'the holder granted alone hears that its node was deleted');
    aloneEvents.stop();
    await lonely.release(held(alone, aloneGrant));

    // A contender comes: the holder then reads its node and watches it, and hears a later deletion through it.
    const backend = newBackend();
    const holder = lockRequest('alone-then-watched');
    const grant = (await backend.tryAcquire(holder))!;
    const holderPath = stateOf(grant).nodePath;
    expect(await backend.isLocked('locks', 'alone-then-watched')).toBe(true);
    expect(armedDataWatches(backend)).toEqual([]);
    const events = lostOf(backend, holder, grant);
    const waiterBackend = newBackend();
    const waiter = lockRequest('alone-then-watched');
    const waiting = track(waiterBackend.acquire(waiter, never()));
    await queued(admin, 'alone-then-watched', 2);
    await eventually(() => armedDataWatches(backend).includes(holderPath), 'the holder watches its own node');
    expect(events.lost()).toBe(false);
    await admin.remove(holderPath);
    await eventually(() => events.lost(), 'the holder hears that its node was deleted');
    events.stop();
    const waiterGrant = await waiting.promise;
    expect(waiterGrant.fencingToken > grant.fencingToken).toBe(true);
    await waiterBackend.release(held(waiter, waiterGrant));
    expect(await backend.release(held(holder, grant))).toBe(false);
  });

  it('a waiter whose own node is deleted behind its back joins again, at the end of the queue', async () => {
    const backend = newBackend();
    const holder = lockRequest('rejoin');
    const first = (await backend.tryAcquire(holder))!;
    const waiterBackend = newBackend();
    const waiter = lockRequest('rejoin');
    const waiting = track(waiterBackend.acquire(waiter, never()));
    await queued(admin, 'rejoin', 2);
    const [, original] = await admin.contenders('rejoin');
    const lateBackend = newBackend();
    const late = lockRequest('rejoin');
    const lateWaiting = track(lateBackend.acquire(late, never()));
    await queued(admin, 'rejoin', 3);

    // The watch on its own node tells the waiter at once; it creates a new node behind the late one.
    await admin.remove(`${lockPath('locks', 'rejoin')}/${original}`);
    await eventually(async () => {
      const nodes = await admin.contenders('rejoin');
      return nodes.length === 3 && nodes[2].includes(waiter.token);
    }, 'the waiter queued again at the end');
    await backend.release(held(holder, first));
    const lateGrant = await lateWaiting.promise;
    expect(waiting.settled()).toBe(false);
    await lateBackend.release(held(late, lateGrant));
    const grant = await waiting.promise;
    expect(nodeName(grant)).not.toBe(original);
    await waiterBackend.release(held(waiter, grant));
  });

  it('a node deleted as soon as it is created is never held unnoticed: the grant is reported lost, or holds a node that exists', async () => {
    // An uncontended grant does not wait for the read that watches its node (QueueEntry.join); a deletion that
    // lands before that read must still reach the holder.
    const backend = newBackend();
    const key = 'vanishing';
    const path = lockPath('locks', key);
    // The lock path stays after a release (emptied paths are swept 10 s later), so the admin can watch it.
    const warm = lockRequest(key);
    await backend.release(held(warm, (await backend.tryAcquire(warm))!));
    for (let round = 0; round < 12; round++) {
      // Deletes the contender that appears next, as soon as the admin hears of it (the watch is set first).
      let deleting!: Promise<void>;
      await new Promise<void>((watching, reject) => {
        deleting = new Promise<void>((deleted) =>
          admin.client.getChildren(
            path,
            () =>
              void admin
                .children(path)
                .then((names) =>
                  Promise.all(names.map((name) => admin.remove(`${path}/${name}`).catch(() => undefined))),
                )
                .then(() => deleted()),
            (error) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : watching()),
          ),
        );
      });
      const request = lockRequest(key);
      const grant = await backend.acquire(request, never());
      let lost = false;
      const stop = backend.observe(held(request, grant), (event) => {
        if (event.type === 'lost') lost = true;
      });
      await deleting;
      await eventually(
        async () => lost || (await admin.stat(stateOf(grant).nodePath)) !== null,
        `round ${round}: the grant is reported lost, or its node exists`,
        5_000,
      );
      stop();
      await backend.release(held(request, grant));
    }
  });

  it('fails a queued acquire soon after the application closed the client it passed in, not at its wait end', async () => {
    const holderBackend = newBackend();
    const holder = lockRequest('closed-client');
    const first = (await holderBackend.tryAcquire(holder))!;
    const appClient = (await AdminClient.connect(server.connectionString)).client;
    const lent = new ZooKeeperLockBackend({ client: appClient });
    backends.push(lent);
    const waiting = track(lent.acquire(lockRequest('closed-client'), never()));
    await queued(admin, 'closed-client', 2);
    appClient.close();
    await holderBackend.release(held(holder, first));
    const error = await within(
      waiting.promise.catch((caught: unknown) => caught),
      10_000,
      'the queued acquire failed',
    );
    expect(error).toBeInstanceOf(LockBackendError);
    expect((error as Error).message).toMatch(/client passed to the backend was closed while this call waited/);
    expect((error as Error).message).toMatch(/close a client you passed in only after the LockService/);
  });

  it('tryAcquire on a held key resolves null and leaves no node behind', async () => {
    const backend = newBackend();
    const holder = lockRequest('try');
    const first = (await backend.tryAcquire(holder))!;
    expect(await newBackend().tryAcquire(lockRequest('try'))).toBeNull();
    expect(await admin.contenders('try')).toEqual([nodeName(first)]);
    expect(await backend.isLocked('locks', 'try')).toBe(true);
    expect(await backend.release(held(holder, first))).toBe(true);
    expect(await backend.isLocked('locks', 'try')).toBe(false);
    expect(await backend.release(held(holder, first))).toBe(false);
  });

  it('empty lock paths are swept later (a hot key keeps its path), never while someone queues on them', async () => {
    const backend = newBackend();
    const other = newBackend();
    const tidy = lockPath('locks', 'tidy');
    const busy = lockPath('locks', 'tidy-busy');
    const a = lockRequest('tidy');
    const grantA = (await backend.tryAcquire(a))!;
    const b = lockRequest('tidy');
    const waitingB = backend.acquire(b, never());
    await queued(admin, 'tidy', 2);
    await backend.release(held(a, grantA));
    const grantB = await waitingB;
    await backend.release(held(b, grantB));
    // Empty, but kept for now: locking the key again reuses it.
    expect((await admin.stat(tidy))!.numChildren).toBe(0);
    const c = lockRequest('tidy');
    const grantC = (await backend.tryAcquire(c))!;
    expect(grantC.fencingToken > grantB.fencingToken).toBe(true);
    await backend.release(held(c, grantC));

    // A path this backend emptied but another backend locked since is not swept.
    const d = lockRequest('tidy-busy');
    await backend.release(held(d, (await backend.tryAcquire(d))!));
    const e = lockRequest('tidy-busy');
    const grantE = (await other.tryAcquire(e))!;

    await backend.close();
    expect(await admin.stat(tidy)).toBeNull();
    expect(await admin.stat(busy)).not.toBeNull();
    // The namespace node stays: every key of the service lives under it.
    expect(await admin.stat('/locks')).not.toBeNull();
    await other.release(held(e, grantE));
  });

  it("an abort while waiting rejects with the signal's reason and deletes the waiter's node", async () => {
    const backend = newBackend();
    const holder = lockRequest('abort');
    const first = (await backend.tryAcquire(holder))!;
    const reason = new Error('deadline');
    const controller = new AbortController();
    const waiting = newBackend().acquire(lockRequest('abort'), controller.signal);
    await queued(admin, 'abort', 2);
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    await queued(admin, 'abort', 1);
    await backend.release(held(holder, first));
  });

  it('an abort during the first connection of a new client rejects once the node its queued create made is deleted', async () => {
    const backend = newBackend();
    const holder = lockRequest('first-connect');
    const first = (await backend.tryAcquire(holder))!;
    const path = lockPath('locks', 'first-connect');
    const before = (await admin.stat(path))!.cversion;
    // A backend never used connects at its first request: the create waits in the client's queue.
    const fresh = newBackend();
    const controller = new AbortController();
    const waiting = fresh.acquire(lockRequest('first-connect'), controller.signal);
    controller.abort(new Error('deadline'));
    // Aborted before the server answered: a LockBackendError (the service hands the caller its own reason).
    await expect(waiting).rejects.toBeInstanceOf(LockBackendError);
    // Already both a create and a delete of a child, with no wait: a read right after the rejection sees no node.
    expect((await admin.stat(path))!.cversion).toBe(before + 2);
    expect(await admin.contenders('first-connect')).toEqual([nodeName(first)]);
    await backend.release(held(holder, first));
  });

  it('an abort while a request is outstanding rejects with LockBackendError; the node is cleaned up once the server is back', async () => {
    const backend = newBackend();
    const holder = lockRequest('outstanding');
    const first = (await backend.tryAcquire(holder))!;
    const proxy = await FaultProxy.start(server.port);
    try {
      const proxied = newBackend(proxy.connectionString);
      await proxied.isLocked('locks', 'outstanding');
      proxy.cut();
      // Once the client knows it is disconnected, it queues the create instead of sending it.
      await eventually(() => !isConnected(proxied), 'the client noticed the cut');
      const controller = new AbortController();
      const waiting = proxied.acquire(lockRequest('outstanding'), controller.signal);
      controller.abort(new Error('deadline'));
      const error = await waiting.then(
        () => undefined,
        (rejection: unknown) => rejection,
      );
      expect(error).toBeInstanceOf(LockBackendError);
      expect((error as LockBackendError).message).toContain(proxy.connectionString);
      // The queued create still runs once the connection is back, and the clean-up then deletes it: the lock
      // path's child version counts both (one create, one delete), so the test can wait for exactly that.
      const path = lockPath('locks', 'outstanding');
      const before = (await admin.stat(path))!.cversion;
      proxy.restore();
      await eventually(
        async () => (await admin.stat(path))!.cversion === before + 2,
        'the late node was created and deleted',
      );
      expect(await admin.contenders('outstanding')).toEqual([nodeName(first)]);
    } finally {
      await proxy.close();
    }
    await backend.release(held(holder, first));
  });

  it('a create whose reply was lost is found again by its protected name: no orphan node, no second node', async () => {
    const proxy = await FaultProxy.start(server.port);
    try {
      const proxied = newBackend(proxy.connectionString);
      await proxied.isLocked('locks', 'protected');
      // The lock path exists, so the create is the only request in flight when the reply is lost.
      await admin.create('/locks', Buffer.alloc(0), 0).catch(() => undefined);
      await admin.create(lockPath('locks', 'protected'), Buffer.alloc(0), 0);
      proxy.dropReplies();
      const request = lockRequest('protected');
      const attempt = proxied.tryAcquire(request);
      // The create reached the server; its reply did not come back.
      await eventually(async () => (await admin.contenders('protected')).length === 1, 'the node exists on the server');
      proxy.cut();
      proxy.restore();
      const grant = await attempt;
      expect(grant).not.toBeNull();
      const nodes = await admin.contenders('protected');
      expect(nodes).toEqual([nodeName(grant!)]);
      expect(nodes[0]).toContain(request.token);
      expect(await proxied.release(held(request, grant!))).toBe(true);
    } finally {
      await proxy.close();
    }
  });
});
