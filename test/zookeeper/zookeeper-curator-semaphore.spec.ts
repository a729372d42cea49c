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
import { AdminClient, eventually, track } from './zookeeper-spec-helpers';

/** JVM start-up and Curator's connect take a few seconds on a busy two-core machine. */
const JAVA_TIMEOUT = 60_000;
const NAMESPACE = 'curator-sem';
const PERMITS = 2;
const LEASE_NODE = /^_c_[0-9a-f-]{36}-lease-\d{10}$/;

describe("Interop with Apache Curator's InterProcessSemaphoreV2", () => {
  let server: TestZooKeeperServer;
  let admin: AdminClient;
  let backends: ZooKeeperLockBackend[];
  let services: LockService[];
  let program: CuratorProgram | undefined;

  /** A Java process taking one lease of Curator's semaphore of PERMITS at `/curator-sem/<key>`. */
  const curator = (key: string, timeoutMs: number) =>
    LineProcess.spawn(findJava(), [
      '-XX:TieredStopAtLevel=1',
      '-cp',
      program!.classpath,
      'CuratorSemaphoreHolder',
      server.connectionString,
      lockPath(NAMESPACE, key),
      String(PERMITS),
      String(timeoutMs),
    ]);
  const leases = (key: string) => admin.children(`${lockPath(NAMESPACE, key)}/leases`);
  const gate = (key: string) => admin.children(`${lockPath(NAMESPACE, key)}/locks`);
  const czxid = async (key: string, lease: string) =>
    (await admin.stat(`${lockPath(NAMESPACE, key)}/leases/${lease}`))!.czxid.readBigUInt64BE(0);
  /** Waits until the semaphore has `count` lease nodes and `gated` nodes in its gate. */
  const nodes = (key: string, count: number, gated: number) =>
    eventually(
      async () => (await leases(key)).length === count && (await gate(key)).length === gated,
      `"${key}" has ${count} leases and ${gated} gate nodes`,
      JAVA_TIMEOUT,
    );

  beforeAll(async () => {
    const [zookeeper, compiled] = await Promise.all([
      startZooKeeper(),
      compileCuratorProgram(join(__dirname, 'java', 'CuratorSemaphoreHolder.java')),
    ]);
    server = zookeeper;
    program = compiled;
    admin = await AdminClient.connect(server.connectionString);
    // Separate sessions, as separate Nest services would have.
    backends = Array.from(
      { length: 3 },
      () => new ZooKeeperLockBackend({ connectionString: server.connectionString, sessionTimeout: 10_000 }),
    );
    services = backends.map((backend) => new LockService(backend, { keyPrefix: NAMESPACE }));
  }, 90_000);

  afterEach(async () => {
    await killAllLineProcesses();
  });

  afterAll(async () => {
    await Promise.all((services ?? []).map((locks) => locks.close()));
    admin?.close();
    await server?.stop();
    program?.dispose();
  });

  it('Curator holds: Node shares the permits with it, waits while Java fills them, and gets one when Java returns its lease', async () => {
    const [a, b] = services;
    const javaHolder = curator('java-first', JAVA_TIMEOUT);
    const acquired = await javaHolder.nextLine('ACQUIRED', JAVA_TIMEOUT);
    const javaLease = acquired.split(' ')[1];
    expect(javaLease).toMatch(LEASE_NODE);
    expect(await leases('java-first')).toEqual([javaLease]);

    // One permit is left: ours, in Curator's layout.
    const mine = await a.acquire('java-first', { permits: PERMITS, ttl: 5_000, waitTimeout: 10_000 });
    const ours = (await leases('java-first')).filter((name) => name !== javaLease);
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatch(LEASE_NODE);
    expect(mine.fencingToken).toBe(await czxid('java-first', ours[0]));
    expect(mine.fencingToken > (await czxid('java-first', javaLease))).toBe(true);

    // Full: a try is refused and leaves nothing behind; an acquire waits in the gate with one extra lease.
    expect(await b.tryAcquire('java-first', { permits: PERMITS, ttl: 5_000 })).toBeNull();
    await nodes('java-first', 2, 0);
    const waiter = track(b.acquire('java-first', { permits: PERMITS, ttl: 5_000, waitTimeout: JAVA_TIMEOUT }));
    await nodes('java-first', 3, 1);
    expect(waiter.settled()).toBe(false);

    javaHolder.writeLine('release');
    await javaHolder.nextLine('RELEASED', JAVA_TIMEOUT);
    const second = await waiter.promise;
    expect(second.isHeld).toBe(true);
    expect(second.fencingToken > mine.fencingToken).toBe(true);
    // Ours are the only two leases, and the gate is empty again.
    await nodes('java-first', 2, 0);
    await Promise.all([mine.release(), second.release()]);
    await nodes('java-first', 0, 0);
  });

  it("Node holds: Curator's acquire(timeout) times out while Node fills the permits, and a patient Curator waiter gets a lease once Node returns one", async () => {
    const [a, b, c] = services;
    const held = await Promise.all(
      [a, b].map((locks) => locks.acquire('node-first', { permits: PERMITS, ttl: 5_000, waitTimeout: 10_000 })),
    );

    const impatient = curator('node-first', 1_500);
    await impatient.nextLine('TIMEOUT', JAVA_TIMEOUT);
    // Curator deleted its lease and left the gate on the timeout: only ours are left.
    await nodes('node-first', 2, 0);

    const patient = curator('node-first', JAVA_TIMEOUT);
    await patient.nextLine('CONNECTED', JAVA_TIMEOUT);
    // Curator waits holding the gate, with its own lease counted (3 > 2).
    await nodes('node-first', 3, 1);
    const acquired = track(patient.nextLine('ACQUIRED', JAVA_TIMEOUT));
    // Java in the gate: our acquire queues behind it, and our try cannot slip past its counted lease.
    const nodeWaiter = track(c.acquire('node-first', { permits: PERMITS, ttl: 5_000, waitTimeout: JAVA_TIMEOUT }));
    await nodes('node-first', 3, 2);
    expect(await c.tryAcquire('node-first', { permits: PERMITS, ttl: 5_000 })).toBeNull();
    expect(acquired.settled()).toBe(false);
    expect(nodeWaiter.settled()).toBe(false);

    await held[0].release();
    const line = await acquired.promise;
    expect(line.split(' ')[1]).toMatch(LEASE_NODE);
    // Java left the gate to our waiter, which counts Java and our other holder: full, so it keeps waiting.
    await nodes('node-first', 3, 1);
    expect(nodeWaiter.settled()).toBe(false);

    patient.writeLine('release');
    await patient.nextLine('RELEASED', JAVA_TIMEOUT);
    const third = await nodeWaiter.promise;
    expect(third.fencingToken > held[1].fencingToken).toBe(true);
    await nodes('node-first', 2, 0);
    await Promise.all([held[1].release(), third.release()]);
    await nodes('node-first', 0, 0);
  });
});
