import type { AcquireRequest, LockGrant } from '../../lib/backends/lock-backend.interface';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper-lock.backend';
import { lockPath, MUTEX_MARKER, READ_MARKER, WRITE_MARKER } from '../../lib/backends/zookeeper/zookeeper-node-layout';
import { startZooKeeper, TestZooKeeperServer } from '../support/zookeeper-server';
import {
  AdminClient,
  armedDataWatches,
  eventually,
  held,
  lockRequest,
  never,
  nodeName,
  queued,
  stateOf,
  track,
} from './zookeeper-spec-helpers';

type Mode = 'exclusive' | 'read' | 'write';

describe('ZooKeeperLockBackend read/write locks', () => {
  let server: TestZooKeeperServer;
  let admin: AdminClient;
  const backends: ZooKeeperLockBackend[] = [];

  /** Every contender on its own connection, like separate app instances. */
  const newBackend = () => {
    const backend = new ZooKeeperLockBackend({
      connectionString: server.connectionString,
      sessionTimeout: 10_000,
      spinDelay: 100,
    });
    backends.push(backend);
    return backend;
  };
  const request = (key: string, mode: Mode): AcquireRequest => ({ ...lockRequest(key), mode });

  /** A contender of `mode` on a new connection: try it, wait for it, release it. */
  const contender = (key: string, mode: Mode) => {
    const backend = newBackend();
    const req = request(key, mode);
    let grant: LockGrant | undefined;
    return {
      backend,
      async tryAcquire() {
        grant = (await backend.tryAcquire(req)) ?? undefined;
        return grant;
      },
      acquire() {
        return track(backend.acquire(req, never()).then((granted) => (grant = granted)));
      },
      release() {
        return backend.release(held(req, grant!));
      },
    };
  };

  beforeAll(async () => {
    server = await startZooKeeper();
    admin = await AdminClient.connect(server.connectionString);
  }, 60_000);

  afterEach(async () => {
    await Promise.all(backends.splice(0).map((backend) => backend.close()));
  });

  afterAll(async () => {
    admin?.close();
    await server?.stop();
  });

  it("says it supports read/write locks, and names nodes as Curator's InterProcessReadWriteLock does", async () => {
    expect(newBackend().supports.readWrite).toBe(true);
    const reader = contender('names', 'read');
    const readGrant = (await reader.tryAcquire())!;
    expect(nodeName(readGrant)).toMatch(new RegExp(`^_c_[0-9a-f-]{36}-${READ_MARKER}\\d{10}$`));
    await reader.release();
    const writer = contender('names', 'write');
    expect(nodeName((await writer.tryAcquire())!)).toMatch(new RegExp(`^_c_[0-9a-f-]{36}-${WRITE_MARKER}\\d{10}$`));
    await writer.release();
    const exclusive = contender('names', 'exclusive');
    expect(nodeName((await exclusive.tryAcquire())!)).toMatch(new RegExp(`^_c_[0-9a-f-]{36}-${MUTEX_MARKER}\\d{10}$`));
    await exclusive.release();
  });

  it('lets readers overlap, with increasing fencing tokens', async () => {
    const readers = [contender('shared', 'read'), contender('shared', 'read'), contender('shared', 'read')];
    const grants: LockGrant[] = [];
    for (const reader of readers) grants.push((await reader.tryAcquire())!);
    expect(grants.every(Boolean)).toBe(true);
    expect(await admin.contenders('shared')).toHaveLength(3);
    expect(grants[1].fencingToken > grants[0].fencingToken && grants[2].fencingToken > grants[1].fencingToken).toBe(
      true,
    );
    // A waiting reader is admitted at once too.
    const late = contender('shared', 'read');
    await late.acquire().promise;
    await Promise.all([...readers, late].map((reader) => reader.release()));
  });

  it('keeps a writer out while readers hold, then keeps readers, writers and exclusive locks out while it holds', async () => {
    const readers = [contender('rw', 'read'), contender('rw', 'read')];
    for (const reader of readers) expect(await reader.tryAcquire()).toBeDefined();
    const writer = contender('rw', 'write');
    expect(await writer.tryAcquire()).toBeUndefined();
    const writing = writer.acquire();
    await queued(admin, 'rw', 3);
    await readers[0].release();
    expect(writing.settled()).toBe(false);
    await readers[1].release();
    const writeGrant = await writing.promise;

    for (const mode of ['read', 'write', 'exclusive'] as const)
      expect(await contender('rw', mode).tryAcquire()).toBeUndefined();
    const reading = contender('rw', 'read');
    const pending = reading.acquire();
    await queued(admin, 'rw', 2);
    expect(pending.settled()).toBe(false);
    await writer.release();
    const readGrant = await pending.promise;
    expect(readGrant.fencingToken > writeGrant.fencingToken).toBe(true);
    await reading.release();
  });

  it('queues a reader that arrives after a waiting writer behind that writer (no writer starvation)', async () => {
    const first = contender('fair', 'read');
    await first.tryAcquire();
    const writer = contender('fair', 'write');
    const writing = writer.acquire();
    await queued(admin, 'fair', 2);
    const late = contender('fair', 'read');
    const reading = late.acquire();
    await queued(admin, 'fair', 3);
    const [, writerNode] = await admin.contenders('fair');
    // The late reader waits on the writer's node, not on the reader that holds.
    await eventually(
      () => armedDataWatches(late.backend).includes(`${lockPath('locks', 'fair')}/${writerNode}`),
      'the late reader watches the writer',
    );
    expect(await late.backend.tryAcquire(request('fair', 'read'))).toBeNull();

    await first.release();
    const writeGrant = await writing.promise;
    expect(reading.settled()).toBe(false);
    await writer.release();
    const readGrant = await reading.promise;
    expect(readGrant.fencingToken > writeGrant.fencingToken).toBe(true);
    await late.release();
  });

  it('makes a reader watch only the nearest writer before it, and a writer its immediate predecessor', async () => {
    const w1 = contender('watch', 'write');
    await w1.tryAcquire();
    const r1 = contender('watch', 'read');
    const r1Waiting = r1.acquire();
    await queued(admin, 'watch', 2);
    const w2 = contender('watch', 'write');
    const w2Waiting = w2.acquire();
    await queued(admin, 'watch', 3);
    const r2 = contender('watch', 'read');
    const r2Waiting = r2.acquire();
    await queued(admin, 'watch', 4);
    const path = lockPath('locks', 'watch');
    const [w1Node, r1Node, w2Node] = (await admin.contenders('watch')).map((name) => `${path}/${name}`);
    await eventually(
      () => armedDataWatches(r2.backend).includes(w2Node),
      'the second reader watches the second writer',
    );
    expect(armedDataWatches(r2.backend)).not.toContain(w1Node);
    await eventually(
      () => armedDataWatches(w2.backend).includes(r1Node),
      'the second writer watches the reader just before it',
    );
    expect(armedDataWatches(r1.backend)).toContain(w1Node);

    await w1.release();
    await r1Waiting.promise;
    expect(w2Waiting.settled() || r2Waiting.settled()).toBe(false);
    await r1.release();
    await w2Waiting.promise;
    expect(r2Waiting.settled()).toBe(false);
    await w2.release();
    await r2Waiting.promise;
    await r2.release();
  });

  it('gives increasing fencing tokens within each mode and across modes, taken one after another', async () => {
    const tokens: bigint[] = [];
    for (const mode of ['read', 'read', 'write', 'write', 'read', 'exclusive', 'read'] as const) {
      const next = contender('tokens', mode);
      tokens.push((await next.acquire().promise).fencingToken);
      await next.release();
    }
    for (let i = 1; i < tokens.length; i++) expect(tokens[i] > tokens[i - 1]).toBe(true);
  });

  it("treats 'exclusive' as a writer: it keeps readers out and waits for them", async () => {
    const exclusive = contender('mixed', 'exclusive');
    await exclusive.tryAcquire();
    expect(await contender('mixed', 'read').tryAcquire()).toBeUndefined();
    expect(await contender('mixed', 'write').tryAcquire()).toBeUndefined();
    const reader = contender('mixed', 'read');
    const reading = reader.acquire();
    await queued(admin, 'mixed', 2);
    expect(reading.settled()).toBe(false);
    await exclusive.release();
    await reading.promise;
    expect(await contender('mixed', 'exclusive').tryAcquire()).toBeUndefined();
    const again = contender('mixed', 'exclusive');
    const waiting = again.acquire();
    await queued(admin, 'mixed', 2);
    await reader.release();
    expect(stateOf(await waiting.promise).nodePath).toContain(MUTEX_MARKER);
    await again.release();
  });
});
