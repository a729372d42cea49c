import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createClient } from 'node-zookeeper-client';
import { lastValueFrom } from 'rxjs';
import type { BackendLockEvent } from '../../lib/backends/lock-backend.interface';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper-lock.backend';
import { LockBackendError, LockLostError } from '../../lib/errors';
import type { LockRenewal } from '../../lib/lock-renewal';
import { LockService } from '../../lib/lock.service';
import { outcome, within } from '../support/time';
import { startZooKeeper, TestZooKeeperServer } from '../support/zookeeper-server';
import { FaultProxy } from './fault-proxy';
import { LineProcess, killAllLineProcesses } from '../support/line-process';
import { AdminClient, eventually, held, lockRequest } from './zookeeper-spec-helpers';

/** Short sessions, so expiry tests take seconds; the server's tickTime of 500 ms allows 1 s to 10 s. */
const SESSION_TIMEOUT = 2_000;
/** ZooKeeper checks expiry once per tick and rounds deadlines up to the next tick; plus a loaded machine. */
const EXPIRY_MARGIN = 6_000;
const ROOT = join(__dirname, '..', '..');

describe('ZooKeeperLockBackend sessions', () => {
  let server: TestZooKeeperServer;
  const cleanups: (() => unknown)[] = [];

  const defer = <T extends { close(): unknown }>(resource: T): T => {
    cleanups.push(() => resource.close());
    return resource;
  };
  const backendAt = (connectionString: string, sessionTimeout = SESSION_TIMEOUT) =>
    defer(new ZooKeeperLockBackend({ connectionString, sessionTimeout, spinDelay: 100 }));
  const service = (backend: ZooKeeperLockBackend) => defer(new LockService(backend, { keyPrefix: 'sessions' }));

  beforeAll(async () => {
    server = await startZooKeeper();
  });

  afterEach(async () => {
    await killAllLineProcesses();
    for (const close of cleanups.splice(0).reverse()) await close();
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('validity is the shorter of the ttl and the negotiated session timeout, measured from before the request', async () => {
    const backend = backendAt(server.connectionString, 4_000);
    const long = lockRequest('validity-long', 60_000, 'sessions');
    const before = performance.now();
    const grant = (await backend.tryAcquire(long))!;
    expect(backend.sessionTimeout).toBe(4_000);
    expect(grant.validUntil).toBeGreaterThan(before + 3_000);
    expect(grant.validUntil).toBeLessThanOrEqual(performance.now() + 4_000);
    const extended = (await backend.extend(held(long, grant), 60_000))!;
    expect(extended).toBeLessThanOrEqual(performance.now() + 4_000);

    const short = lockRequest('validity-short', 1_000, 'sessions');
    const shortGrant = (await backend.tryAcquire(short))!;
    expect(shortGrant.validUntil).toBeLessThanOrEqual(performance.now() + 1_000);
    await backend.release(held(long, grant));
    await backend.release(held(short, shortGrant));
  });

  it('a dropped connection is SUSPENDED: at-risk on renewals$; reconnecting in time is RECONNECTED: the lock is kept', async () => {
    const proxy = defer(await FaultProxy.start(server.port));
    const backend = backendAt(proxy.connectionString, 6_000);
    const locks = service(backend);
    const lock = await locks.acquire('suspend', { ttl: 3_000 });
    const events: LockRenewal[] = [];
    lock.renewals$.subscribe({ next: (event) => events.push(event), error: () => undefined });
    const raw = lockRequest('suspend-raw', 3_000, 'sessions');
    const grant = (await backend.tryAcquire(raw))!;
    const observed: BackendLockEvent[] = [];
    const stop = backend.observe(held(raw, grant), (event) => observed.push(event));

    proxy.cut();
    await eventually(() => events.some((event) => event.type === 'at-risk'), 'renewals$ emits at-risk');
    const atRisk = events.find((event) => event.type === 'at-risk')!;
    expect(atRisk.type === 'at-risk' && atRisk.error).toBeInstanceOf(LockBackendError);
    expect(observed.map((event) => event.type)).toEqual(['at-risk']);
    expect(lock.isHeld).toBe(true);

    proxy.restore();
    await eventually(() => observed.length === 2, 'the backend reports the reconnection');
    expect(observed.map((event) => event.type)).toEqual(['at-risk', 'recovered']);
    const renewedBefore = events.filter((event) => event.type === 'renewed').length;
    await eventually(
      () => events.filter((event) => event.type === 'renewed').length > renewedBefore,
      'a renewal after the reconnection',
    );
    expect(lock.isHeld).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    expect(await locks.isLocked('suspend')).toBe(true);

    stop();
    await backend.release(held(raw, grant));
    await lock.release();
  });

  it('a silent partition (socket open, nothing gets through) is noticed after 2/3 of the session timeout: at-risk, then recovered when it heals in time', async () => {
    const sessionTimeout = 6_000;
    const proxy = defer(await FaultProxy.start(server.port));
    const backend = backendAt(proxy.connectionString, sessionTimeout);
    const request = lockRequest('silent', 3_000, 'sessions');
    const grant = (await backend.tryAcquire(request))!;
    const observed: BackendLockEvent[] = [];
    const stop = backend.observe(held(request, grant), (event) => observed.push(event));

    proxy.silence();
    const silencedAt = performance.now();
    await eventually(() => observed.length === 1, 'the client gives up on the silent connection', sessionTimeout);
    const noticedAfter = performance.now() - silencedAt;
    expect(observed[0].type).toBe('at-risk');
    // Not before the client's own ping interval (a third) could have been answered, not after the session ends.
    expect(noticedAfter).toBeGreaterThan(sessionTimeout / 3);
    expect(noticedAfter).toBeLessThan(sessionTimeout);

    proxy.restore();
    await eventually(() => observed.length === 2, 'the client reconnects to the same session');
    expect(observed[1].type).toBe('recovered');
    expect(await backend.extend(held(request, grant), 3_000)).not.toBeNull();
    stop();
    expect(await backend.release(held(request, grant))).toBe(true);
  });

  it('a release whose delete is lost with the connection deletes the node once the same session reconnects: the lock is not held until the session ends', async () => {
    const proxy = defer(await FaultProxy.start(server.port));
    const backend = backendAt(proxy.connectionString, 8_000);
    const request = lockRequest('lost-delete', 8_000, 'sessions');
    const grant = (await backend.tryAcquire(request))!;
    const nodePath = (grant.state as { nodePath: string }).nodePath;

    proxy.silence();
    const sent = proxy.swallowed(nodePath.slice(nodePath.lastIndexOf('/') + 1));
    const released = outcome(backend.release(held(request, grant)));
    await within(sent, 10_000, 'the delete request leaving the client');
    // The connection drops with the delete unanswered: node-zookeeper-client fails it (CONNECTION_LOSS).
    proxy.cut();
    proxy.restore();
    const { value, error } = await within(released, 15_000, 'the release settling');
    expect(error).toBeUndefined();
    expect(value).toBe(true);
    const admin = defer(await AdminClient.connect(server.connectionString));
    expect(await admin.contenders('lost-delete', 'sessions')).toEqual([]);
    const contender = backendAt(server.connectionString);
    const next = await contender.tryAcquire(lockRequest('lost-delete', 8_000, 'sessions'));
    expect(next).not.toBeNull();
  });

  it('a session that expires while cut off is LOST: renewals$ errors with LockLostError, signal aborts, and only then does another client get the lock', async () => {
    const proxy = defer(await FaultProxy.start(server.port));
    const backend = backendAt(proxy.connectionString);
    const locks = service(backend);
    const lock = await locks.acquire('expire', { ttl: SESSION_TIMEOUT });
    const ended = outcome(lastValueFrom(lock.renewals$, { defaultValue: undefined }));
    const raw = lockRequest('expire-raw', SESSION_TIMEOUT, 'sessions');
    const rawGrant = (await backend.tryAcquire(raw))!;
    const observed: BackendLockEvent[] = [];
    backend.observe(held(raw, rawGrant), (event) => observed.push(event));

    const contender = service(backendAt(server.connectionString));
    proxy.cut();
    const next = await contender.acquire('expire', { ttl: 10_000, waitTimeout: SESSION_TIMEOUT + EXPIRY_MARGIN });
    // The server expired the session: by then the old holder's validity had run out.
    expect(lock.isHeld).toBe(false);
    expect(lock.expiresAt).toBeLessThanOrEqual(Date.now());
    expect(next.fencingToken > lock.fencingToken).toBe(true);

    const { error } = await within(ended, SESSION_TIMEOUT + EXPIRY_MARGIN, 'renewals$ erroring');
    expect(error).toBeInstanceOf(LockLostError);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBe(error);

    // Back on the network, the client learns that its session expired: LOST for every lock it held ...
    proxy.restore();
    await eventually(() => observed.some((event) => event.type === 'lost'), 'the backend reports the expiry');
    expect(observed.map((event) => event.type)).toEqual(['at-risk', 'lost']);
    expect(await backend.extend(held(raw, rawGrant), SESSION_TIMEOUT)).toBeNull();
    expect(await backend.release(held(raw, rawGrant))).toBe(false);
    // ... and a backend that owns its client carries on with a new session.
    const again = await locks.acquire('expire-after', { ttl: SESSION_TIMEOUT, waitTimeout: 10_000 });
    await again.release();
    await lock.release();
    await next.release();
  });

  it("an application's own client that expired stays expired: calls fail with a message saying to create a new client", async () => {
    const proxy = defer(await FaultProxy.start(server.port));
    const client = createClient(proxy.connectionString, { sessionTimeout: SESSION_TIMEOUT, spinDelay: 100 });
    const expired = new Promise<void>((resolve) => client.once('expired', resolve));
    client.connect();
    cleanups.push(() => client.close());
    const backend = defer(new ZooKeeperLockBackend({ client }));
    expect(backend.address).toBe(proxy.connectionString);
    const request = lockRequest('app-client', SESSION_TIMEOUT, 'sessions');
    const grant = (await backend.tryAcquire(request))!;

    proxy.cut();
    const contender = backendAt(server.connectionString);
    const other = lockRequest('app-client', 10_000, 'sessions');
    const otherGrant = await contender.acquire(other, AbortSignal.timeout(SESSION_TIMEOUT + EXPIRY_MARGIN));
    proxy.restore();
    await within(expired, 10_000, 'the client learning that its session expired');

    expect(await backend.extend(held(request, grant), SESSION_TIMEOUT)).toBeNull();
    expect(await backend.release(held(request, grant))).toBe(false);
    const error = await backend.tryAcquire(lockRequest('app-client-2', 1_000, 'sessions')).then(
      () => undefined,
      (rejection: unknown) => rejection,
    );
    expect(error).toBeInstanceOf(LockBackendError);
    expect((error as Error).message).toMatch(/create a new client/);
    await contender.release(held(other, otherGrant));
  });

  it('a SIGKILLed holder process frees the lock within its session timeout, even with a shorter ttl', async () => {
    const sessionTimeout = 3_000;
    const holder = LineProcess.spawn(process.execPath, [
      '--require',
      join(ROOT, 'test', 'support', 'ts-register.js'),
      join(__dirname, 'fixtures', 'hold-lock.ts'),
      server.connectionString,
      'sessions',
      'crash',
      String(sessionTimeout),
      '1000',
    ]);
    const line = await holder.nextLine('HELD', 30_000);
    const heldToken = BigInt(line.split(' ')[1]);
    await holder.kill('SIGKILL');
    const killedAt = performance.now();

    const locks = service(backendAt(server.connectionString, 10_000));
    // Long past the holder's 1 s ttl, its session is still alive on the server.
    expect(await locks.tryAcquire('crash', { ttl: 10_000 })).toBeNull();
    const lock = await locks.acquire('crash', { ttl: 10_000, waitTimeout: sessionTimeout + EXPIRY_MARGIN });
    const freedAfter = performance.now() - killedAt;
    expect(freedAfter).toBeLessThan(sessionTimeout + EXPIRY_MARGIN);
    expect(lock.fencingToken > heldToken).toBe(true);
    await lock.release();
  });
});
