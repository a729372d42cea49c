import { LockPathSweeper } from '../../lib/backends/zookeeper/lock-path-sweeper';
import { CreateMode } from 'node-zookeeper-client';
import { zxidOf } from '../../lib/backends/zookeeper/zookeeper-lock-state';
import { ZooKeeperSession } from '../../lib/backends/zookeeper/zookeeper-session';
import { startZooKeeper, TestZooKeeperServer } from '../support/zookeeper-server';
import { AdminClient } from './zookeeper-spec-helpers';

/** The age a reaped path must have (MIN_AGE_MS in lock-path-sweeper.ts), with slack for the two clocks' reads. */
const OLD_ENOUGH_MS = 5_500;

/**
 * What the sweeper and the reaper delete: only idle lock paths. They must never take a node from under someone
 * about to use it (Curator re-creates a missing parent, then creates its node in a second request), nor a node
 * that is not a lock path.
 */
describe('LockPathSweeper: what counts as an idle lock path', () => {
  let server: TestZooKeeperServer;
  let admin: AdminClient;
  let session: ZooKeeperSession;

  beforeAll(async () => {
    server = await startZooKeeper();
    admin = await AdminClient.connect(server.connectionString);
    session = new ZooKeeperSession({ client: admin.client });
  });

  afterAll(async () => {
    await session?.close();
    admin?.close();
    await server?.stop();
  });

  const persistent = (path: string, data = '') => admin.create(path, Buffer.from(data), CreateMode.PERSISTENT);

  it('a reap deletes idle lock paths (a semaphore’s parts first) and keeps new, held, ephemeral and data nodes', async () => {
    const root = '/reap';
    await persistent(root);
    for (const path of [
      'old-lock',
      'old-sem',
      'old-sem/leases',
      'old-sem/locks',
      'held',
      'held/_c_x-lock-0000000001',
    ]) {
      await persistent(`${root}/${path}`);
    }
    await persistent(`${root}/settings`, 'not a lock');
    await admin.create(`${root}/ephemeral`, Buffer.alloc(0), CreateMode.EPHEMERAL);
    await new Promise((resolve) => setTimeout(resolve, OLD_ENOUGH_MS));
    // As Curator's semaphore does after finding its parent gone: re-created, its lease about to follow.
    for (const path of ['new-sem', 'new-sem/leases']) await persistent(`${root}/${path}`);

    const sweeper = new LockPathSweeper(session, () => undefined, 0);
    sweeper.use('reap');
    await sweeper.reap();

    expect((await admin.children(root)).sort()).toEqual(['ephemeral', 'held', 'new-sem', 'settings']);
    expect(await admin.children(`${root}/new-sem`)).toEqual(['leases']);
    sweeper.stop();
  }, 30_000);

  it('a sweep deletes a path our node was in, however new, but not one re-created after our grant', async () => {
    const root = '/sweep';
    await persistent(root);
    await persistent(`${root}/ours`);
    await persistent(`${root}/ours/leases`);
    // Our lease's grant came after its parents were created: a bound no smaller than their czxid.
    const ourGrant = zxidOf((await admin.stat(`${root}/ours/leases`))!.czxid);
    // Deleted and re-created by someone else after our grant: a larger czxid.
    await persistent(`${root}/recreated`);
    const sweeper = new LockPathSweeper(session, () => undefined, 0);
    sweeper.addParentsOf(`${root}/ours/leases/_c_x-lease-0000000001`, ourGrant);
    sweeper.addParentsOf(`${root}/recreated/_c_y-lock-0000000001`, ourGrant);
    await sweeper.sweep();
    expect(await admin.children(root)).toEqual(['recreated']);
    sweeper.stop();
  });
});
