import { join } from 'node:path';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper-lock.backend';
import { lockPath } from '../../lib/backends/zookeeper/zookeeper-node-layout';
import { LockService } from '../../lib/lock.service';
import {
  compileCuratorProgram,
  type CuratorProgram,
  findJava,
  startZooKeeper,
  TestZooKeeperServer,
} from '../support/zookeeper-server';
import { LineProcess, killAllLineProcesses } from '../support/line-process';
import { AdminClient, queued, track } from './zookeeper-spec-helpers';

/** JVM start-up and Curator's connect take a few seconds on a busy two-core machine. */
const JAVA_TIMEOUT = 60_000;
const CURATOR_NODE = /^_c_[0-9a-f-]{36}-lock-\d{10}$/;

describe("Interop with Apache Curator's InterProcessMutex", () => {
  let server: TestZooKeeperServer;
  let admin: AdminClient;
  let backend: ZooKeeperLockBackend;
  let locks: LockService;
  let program: CuratorProgram | undefined;

  /** A Java process that acquires the Curator mutex at `/curator/<key>`, waiting up to `timeoutMs`. */
  const curator = (key: string, timeoutMs: number) =>
    LineProcess.spawn(findJava(), [
      '-XX:TieredStopAtLevel=1',
      '-cp',
      program!.classpath,
      'CuratorLockHolder',
      server.connectionString,
      lockPath('curator', key),
      String(timeoutMs),
    ]);

  beforeAll(async () => {
    const [zookeeper, compiled] = await Promise.all([
      startZooKeeper(),
      compileCuratorProgram(join(__dirname, 'java', 'CuratorLockHolder.java')),
    ]);
    server = zookeeper;
    program = compiled;
    admin = await AdminClient.connect(server.connectionString);
    backend = new ZooKeeperLockBackend({ connectionString: server.connectionString, sessionTimeout: 10_000 });
    locks = new LockService(backend, { keyPrefix: 'curator' });
  }, 90_000);

  afterEach(async () => {
    await killAllLineProcesses();
  });

  afterAll(async () => {
    await locks?.close();
    admin?.close();
    await server?.stop();
    program?.dispose();
  });

  it("Curator holds: Node's tryAcquire is refused, Node's acquire queues behind it and gets the lock when Java releases, before a later Java waiter", async () => {
    const javaHolder = curator('java-first', JAVA_TIMEOUT);
    await javaHolder.nextLine('ACQUIRED', JAVA_TIMEOUT);
    const [javaNode] = await admin.contenders('java-first', 'curator');
    expect(javaNode).toMatch(CURATOR_NODE);
    const javaCzxid = (await admin.stat(`${lockPath('curator', 'java-first')}/${javaNode}`))!.czxid.readBigUInt64BE(0);

    expect(await locks.tryAcquire('java-first', { ttl: 5_000 })).toBeNull();
    expect(await locks.isLocked('java-first')).toBe(true);
    const nodeWaiter = track(locks.acquire('java-first', { ttl: 5_000, waitTimeout: JAVA_TIMEOUT }));
    await queued(admin, 'java-first', 2, 'curator');
    // A second Java service arrives after us: FIFO puts it behind our node.
    const javaLate = curator('java-first', JAVA_TIMEOUT);
    await javaLate.nextLine('CONNECTED', JAVA_TIMEOUT);
    await queued(admin, 'java-first', 3, 'curator');
    expect(nodeWaiter.settled()).toBe(false);

    javaHolder.writeLine('release');
    await javaHolder.nextLine('RELEASED', JAVA_TIMEOUT);
    const lock = await nodeWaiter.promise;
    expect(lock.isHeld).toBe(true);
    expect(lock.fencingToken > javaCzxid).toBe(true);
    // Curator sees our node first in its queue and keeps waiting.
    expect(await admin.contenders('java-first', 'curator')).toHaveLength(2);

    await lock.release();
    await javaLate.nextLine('ACQUIRED', JAVA_TIMEOUT);
    javaLate.writeLine('release');
    await javaLate.nextLine('RELEASED', JAVA_TIMEOUT);
  });

  it("Node holds: Curator's acquire(timeout) times out, and a patient Curator waiter gets the lock once Node releases", async () => {
    const lock = await locks.acquire('node-first', { ttl: 5_000 });
    const impatient = curator('node-first', 1_500);
    await impatient.nextLine('TIMEOUT', JAVA_TIMEOUT);
    // Curator deleted its node on the timeout: only ours is left.
    expect(await admin.contenders('node-first', 'curator')).toHaveLength(1);

    const patient = curator('node-first', JAVA_TIMEOUT);
    await patient.nextLine('CONNECTED', JAVA_TIMEOUT);
    await queued(admin, 'node-first', 2, 'curator');
    const acquired = track(patient.nextLine('ACQUIRED', JAVA_TIMEOUT));
    expect(acquired.settled()).toBe(false);
    await lock.release();
    const line = await acquired.promise;
    // Curator lists the participants in its order: its own node only, ours is gone.
    expect(line.split(' ')[1].split(',')).toHaveLength(1);
    expect(await locks.tryAcquire('node-first', { ttl: 5_000 })).toBeNull();
    patient.writeLine('release');
    await patient.nextLine('RELEASED', JAVA_TIMEOUT);
    const after = await locks.acquire('node-first', { ttl: 5_000, waitTimeout: 10_000 });
    expect(after.fencingToken > lock.fencingToken).toBe(true);
    await after.release();
  });
});
