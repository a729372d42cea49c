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
const CURATOR_WRITE_NODE = /^_c_[0-9a-f-]{36}-__WRIT__\d{10}$/;
const CURATOR_READ_NODE = /^_c_[0-9a-f-]{36}-__READ__\d{10}$/;

describe("Interop with Apache Curator's InterProcessReadWriteLock", () => {
  let server: TestZooKeeperServer;
  let admin: AdminClient;
  let backend: ZooKeeperLockBackend;
  let locks: LockService;
  let program: CuratorProgram | undefined;

  /** A Java process taking Curator's read or write lock at `/curator-rw/<key>`, waiting up to `timeoutMs`. */
  const curator = (key: string, mode: 'read' | 'write', timeoutMs: number) =>
    LineProcess.spawn(findJava(), [
      '-XX:TieredStopAtLevel=1',
      '-cp',
      program!.classpath,
      'CuratorRwLockHolder',
      server.connectionString,
      lockPath('curator-rw', key),
      mode,
      String(timeoutMs),
    ]);

  beforeAll(async () => {
    const [zookeeper, compiled] = await Promise.all([
      startZooKeeper(),
      compileCuratorProgram(join(__dirname, 'java', 'CuratorRwLockHolder.java')),
    ]);
    server = zookeeper;
    program = compiled;
    admin = await AdminClient.connect(server.connectionString);
    backend = new ZooKeeperLockBackend({ connectionString: server.connectionString, sessionTimeout: 10_000 });
    locks = new LockService(backend, { keyPrefix: 'curator-rw' });
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

  it('a Java writer blocks a Node reader, which gets the lock once Java releases; a Java reader shares it with Node', async () => {
    const javaWriter = curator('java-writes', 'write', JAVA_TIMEOUT);
    await javaWriter.nextLine('ACQUIRED', JAVA_TIMEOUT);
    const [javaNode] = await admin.contenders('java-writes', 'curator-rw');
    expect(javaNode).toMatch(CURATOR_WRITE_NODE);

    expect(await locks.tryAcquire('java-writes', { mode: 'read', ttl: 5_000 })).toBeNull();
    expect(await locks.tryAcquire('java-writes', { mode: 'write', ttl: 5_000 })).toBeNull();
    const nodeReader = track(locks.acquire('java-writes', { mode: 'read', ttl: 5_000, waitTimeout: JAVA_TIMEOUT }));
    await queued(admin, 'java-writes', 2, 'curator-rw');
    expect(nodeReader.settled()).toBe(false);

    javaWriter.writeLine('release');
    await javaWriter.nextLine('RELEASED', JAVA_TIMEOUT);
    const reader = await nodeReader.promise;
    expect(reader.isHeld).toBe(true);

    // Readers share: a Java reader gets in while ours holds, and Curator lists both read nodes.
    const javaReader = curator('java-writes', 'read', JAVA_TIMEOUT);
    const line = await javaReader.nextLine('ACQUIRED', JAVA_TIMEOUT);
    const participants = line.split(' ')[1].split(',');
    expect(participants).toHaveLength(2);
    for (const participant of participants)
      expect(participant.slice(participant.lastIndexOf('/') + 1)).toMatch(CURATOR_READ_NODE);
    expect(reader.isHeld).toBe(true);
    javaReader.writeLine('release');
    await javaReader.nextLine('RELEASED', JAVA_TIMEOUT);
    await reader.release();
  });

  it('a Node writer blocks a Java reader: acquire(timeout) times out, and a patient one gets in once Node releases', async () => {
    const writer = await locks.acquire('node-writes', { mode: 'write', ttl: 5_000 });
    const impatient = curator('node-writes', 'read', 1_500);
    await impatient.nextLine('TIMEOUT', JAVA_TIMEOUT);
    expect(await admin.contenders('node-writes', 'curator-rw')).toHaveLength(1);

    const patient = curator('node-writes', 'read', JAVA_TIMEOUT);
    await patient.nextLine('CONNECTED', JAVA_TIMEOUT);
    await queued(admin, 'node-writes', 2, 'curator-rw');
    const acquired = track(patient.nextLine('ACQUIRED', JAVA_TIMEOUT));
    expect(acquired.settled()).toBe(false);
    await writer.release();
    await acquired.promise;
    // Java's reader holds: our writer is refused, our reader shares.
    expect(await locks.tryAcquire('node-writes', { mode: 'write', ttl: 5_000 })).toBeNull();
    const reader = await locks.tryAcquire('node-writes', { mode: 'read', ttl: 5_000 });
    expect(reader).not.toBeNull();
    expect(reader!.fencingToken > writer.fencingToken).toBe(true);
    await reader!.release();
    patient.writeLine('release');
    await patient.nextLine('RELEASED', JAVA_TIMEOUT);
  });
});
