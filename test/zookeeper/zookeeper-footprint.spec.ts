import { LockService } from '../../lib';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper-lock.backend';
import { encodePathSegment, namespacePath } from '../../lib/backends/zookeeper/zookeeper-node-layout';
import { startZooKeeper, TestZooKeeperServer } from '../support/zookeeper-server';
import { FaultProxy } from './fault-proxy';
import { AdminClient, eventually } from './zookeeper-spec-helpers';
import { LineProcess } from '../support/line-process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const NAMES = 1_000;
const SEMAPHORE_NAMES = 200;

/**
 * A service that locks per order or per file takes each name once. Each name's lock path is a persistent
 * node (node-zookeeper-client cannot create Curator's container nodes), so the backend must delete the
 * emptied paths itself, as Curator's ChildReaper does, or the tree grows by one node per name forever.
 */
describe('ZooKeeper: footprint of many names taken once', () => {
  let server: TestZooKeeperServer;
  let admin: AdminClient;

  beforeAll(async () => {
    server = await startZooKeeper();
    admin = await AdminClient.connect(server.connectionString);
  });

  afterAll(async () => {
    admin?.close();
    await server?.stop();
  });

  it(`leaves no node under the namespace after ${NAMES} names were taken and released, with the service still open`, async () => {
    const locks = new LockService(
      new ZooKeeperLockBackend({ connectionString: server.connectionString, sessionTimeout: 10_000 }),
      {
        keyPrefix: 'footprint',
      },
    );
    try {
      let next = 0;
      const lane = async () => {
        while (next < NAMES) {
          const handle = await locks.acquire(`order:${next++}`);
          await handle.release();
        }
      };
      await Promise.all(Array.from({ length: 20 }, lane));
      // Emptied paths are swept in one batch, at the latest after the sweep delay (10 s).
      await eventually(
        async () => (await admin.children(namespacePath('footprint'))).length === 0,
        'every lock path is swept',
        20_000,
      );
    } finally {
      await locks.close();
    }
  }, 120_000);

  it('a lock and a permit lost with their expired session leave no node: the server deleted ours, the backend sweeps the paths once it has a new session', async () => {
    const sessionTimeout = 2_000;
    const proxy = await FaultProxy.start(server.port);
    const locks = new LockService(
      new ZooKeeperLockBackend({ connectionString: proxy.connectionString, sessionTimeout, spinDelay: 100 }),
      { keyPrefix: 'footprint-lost' },
    );
    try {
      const lock = await locks.acquire('order:lost', { ttl: sessionTimeout });
      const permit = await locks.acquire('export:lost', { ttl: sessionTimeout, permits: 2 });
      proxy.cut();
      // The server expires the session (ticks of 500 ms, and a loaded machine) and deletes both nodes.
      await eventually(
        async () => (await admin.contenders('order:lost', 'footprint-lost')).length === 0,
        'the server deleting the expired session’s node',
        20_000,
      );
      expect(await admin.children(namespacePath('footprint-lost'))).toEqual(
        expect.arrayContaining([encodePathSegment('order:lost'), encodePathSegment('export:lost')]),
      );
      proxy.restore();
      await eventually(() => lock.signal.aborted && permit.signal.aborted, 'both handles reporting the loss', 20_000);
      await lock.release();
      await permit.release();
      await eventually(
        async () => (await admin.children(namespacePath('footprint-lost'))).length === 0,
        'the emptied lock and semaphore paths swept',
        30_000,
      );
    } finally {
      await locks.close();
      await proxy.close();
    }
  }, 90_000);

  it('the lock and semaphore paths a killed process left are reaped by another instance, which keeps the path it holds', async () => {
    const sessionTimeout = 2_000;
    const namespace = 'footprint-dead';
    const holders = [['order:dead'], ['export:dead', '2']].map(([key, permits]) =>
      LineProcess.spawn(process.execPath, [
        '--require',
        join(ROOT, 'test', 'support', 'ts-register.js'),
        join(__dirname, 'fixtures', 'hold-lock.ts'),
        server.connectionString,
        namespace,
        key,
        String(sessionTimeout),
        '10000',
        ...(permits ? [permits] : []),
      ]),
    );
    const locks = new LockService(
      new ZooKeeperLockBackend({
        connectionString: server.connectionString,
        sessionTimeout: 10_000,
        reapInterval: 1_000,
      }),
      { keyPrefix: namespace },
    );
    try {
      await Promise.all(holders.map((holder) => holder.nextLine('HELD', 30_000)));
      await Promise.all(holders.map((holder) => holder.kill('SIGKILL')));
      const kept = await locks.acquire('order:kept', { ttl: 10_000 });
      const root = namespacePath(namespace);
      // The dead sessions expire, and their nodes go with them; their paths stay until someone deletes them.
      await eventually(
        async () => (await admin.contenders('order:dead', namespace)).length === 0,
        'the server deleting the killed holder’s node',
        20_000,
      );
      await eventually(
        async () => JSON.stringify(await admin.children(root)) === JSON.stringify([encodePathSegment('order:kept')]),
        'every path but the held one reaped',
        30_000,
      );
      expect(kept.signal.aborted).toBe(false);
      await kept.release();
    } finally {
      await Promise.all(holders.map((holder) => holder.kill('SIGKILL')));
      await locks.close();
    }
  }, 90_000);

  it(`leaves no node under the namespace after ${SEMAPHORE_NAMES} semaphores were taken and released: their \`locks\` and \`leases\` parents are swept too`, async () => {
    const locks = new LockService(
      new ZooKeeperLockBackend({ connectionString: server.connectionString, sessionTimeout: 10_000 }),
      {
        keyPrefix: 'footprint-sem',
      },
    );
    try {
      let next = 0;
      const lane = async () => {
        while (next < SEMAPHORE_NAMES) {
          const handle = await locks.acquire(`export:${next++}`, { permits: 2 });
          await handle.release();
        }
      };
      await Promise.all(Array.from({ length: 10 }, lane));
      await eventually(
        async () => (await admin.children(namespacePath('footprint-sem'))).length === 0,
        'every semaphore path is swept',
        20_000,
      );
    } finally {
      await locks.close();
    }
  }, 120_000);
});
