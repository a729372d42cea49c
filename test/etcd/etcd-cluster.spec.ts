import { performance } from 'node:perf_hooks';
import { firstValueFrom, filter, take, toArray } from 'rxjs';
import { EtcdLockBackend } from '../../lib/backends/etcd/etcd-lock.backend';
import { LockBackendError } from '../../lib/errors';
import { LockService } from '../../lib/lock.service';
import { startEtcdCluster, TestEtcdCluster } from '../support/etcd-cluster';
import { within } from '../support/time';

/** Generous: an election on a loaded two-core machine, plus the client finding another member. */
const FAILOVER_MS = 20_000;
const TTL = 3_000;
/**
 * A lock outlives a leader failover only if its ttl covers the election (1-2 election timeouts) plus a
 * renewal that hung on the way: 10 s here, with 1 s elections. A waiter's lease is different: the backend
 * keeps it alive itself, so the waiter keeps the short TTL.
 */
const FAILOVER_TTL = 10_000;

describe('EtcdLockBackend on a 3-member cluster while members fail', () => {
  let cluster: TestEtcdCluster;
  const services: LockService[] = [];

  const service = (keyPrefix = 'cluster') => {
    const locks = new LockService(new EtcdLockBackend({ hosts: cluster.endpoints }), {
      keyPrefix,
      operationTimeout: 10_000,
    });
    services.push(locks);
    return locks;
  };

  beforeAll(async () => {
    cluster = await startEtcdCluster(3);
  }, 90_000);

  afterEach(async () => {
    await Promise.allSettled(services.splice(0).map((locks) => locks.close()));
    // Every member runs again before the next test.
    for (const member of cluster.members) if (!member.isRunning()) await member.restart();
    await cluster.waitUntilHealthy();
  }, 90_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 30_000);

  it('reports the members as the backend address', () => {
    expect(service().backend.address).toBe(cluster.endpoints.join(','));
  });

  it('keeps a held lock renewed and still wakes a queued waiter when the leader is killed', async () => {
    const [a, b] = [service(), service()];
    const holder = await a.acquire('leader-loss', { ttl: FAILOVER_TTL });
    // Possibly still joining the queue when the leader dies: one request may then hang for etcd's request
    // timeout (7 s), longer than its 3 s lease lives unless the backend keeps it alive meanwhile.
    const waiting = b.acquire('leader-loss', { ttl: TTL, waitTimeout: 60_000 });

    const leader = await cluster.leader();
    await cluster.members[leader].kill('SIGKILL');
    // Three more renewals after the crash: the lock lived through the election.
    const renewals = await within(
      firstValueFrom(
        holder.renewals$.pipe(
          filter((event) => event.type === 'renewed'),
          take(3),
          toArray(),
        ),
      ),
      FAILOVER_MS + FAILOVER_TTL,
      'three renewals after the leader was killed',
    );
    expect(renewals).toHaveLength(3);
    expect(holder.isHeld).toBe(true);

    await holder.release();
    const next = await within(waiting, FAILOVER_MS, 'the waiter being woken');
    expect(next.fencingToken).toBeGreaterThan(holder.fencingToken);
    expect(await cluster.leader()).not.toBe(leader);
    await next.release();
  });

  it('grants read/write locks and semaphores on the remaining quorum, and the restarted member rejoins', async () => {
    const [a, b] = [service(), service()];
    await cluster.members[1].stop();

    const readers = await Promise.all(
      [a, b].map((locks) => locks.acquire('one-down', { mode: 'read', ttl: TTL, waitTimeout: FAILOVER_MS })),
    );
    const writing = a.acquire('one-down', { mode: 'write', ttl: TTL, waitTimeout: FAILOVER_MS });
    await Promise.all(readers.map((reader) => reader.release()));
    const writer = await writing;
    expect(writer.fencingToken).toBeGreaterThan(readers[1].fencingToken);
    await writer.release();

    const permits = await Promise.all(
      [a, b].map((locks) => locks.acquire('one-down', { permits: 2, ttl: TTL, waitTimeout: FAILOVER_MS })),
    );
    expect(await a.tryAcquire('one-down', { permits: 2, ttl: TTL })).toBeNull();
    await Promise.all(permits.map((permit) => permit.release()));

    await cluster.members[1].restart();
    await cluster.waitUntilHealthy();
    // A backend that only knows the restarted member sees the same locks: it caught up.
    const only = new LockService(new EtcdLockBackend({ hosts: [cluster.members[1].endpoint] }), {
      keyPrefix: 'cluster',
    });
    services.push(only);
    const held = await a.acquire('rejoined', { ttl: TTL });
    expect(await within(only.isLocked('rejoined'), FAILOVER_MS, 'isLocked on the restarted member')).toBe(true);
    await held.release();
  });

  it('fails a waiting acquire with LockBackendError within waitTimeout when the quorum is gone, and works again after', async () => {
    const locks = service();
    await Promise.all([cluster.members[0].kill('SIGKILL'), cluster.members[1].kill('SIGKILL')]);
    const started = performance.now();
    const failure = await locks.acquire('no-quorum', { ttl: TTL, waitTimeout: 2_000 }).then(
      () => new Error('granted without a quorum'),
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(LockBackendError);
    expect(performance.now() - started).toBeLessThan(2_000 + 5_000);

    await Promise.all([cluster.members[0].restart(), cluster.members[1].restart()]);
    await cluster.waitUntilHealthy();
    const lock = await locks.acquire('no-quorum', { ttl: TTL, waitTimeout: FAILOVER_MS });
    await lock.release();
  });
});
