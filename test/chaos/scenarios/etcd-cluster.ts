import { lockPrefix } from '../../../lib/backends/etcd/etcd-key-layout';
import { EtcdLockBackend } from '../../../lib/backends/etcd/etcd-lock.backend';
import { LockBackendError } from '../../../lib/errors';
import { LockService } from '../../../lib/lock.service';
import { startEtcdCluster, TestEtcdCluster } from '../../support/etcd-cluster';
import { checkHistory } from '../harness/checker';
import { hrNow, msBetween } from '../harness/hrtime';
import { chaosNamespace, startIncrementRun } from '../harness/increment-run';
import { ChaosProfileName, sized } from '../harness/profile';
import { startRegister } from '../harness/register';
import { Checks, ms, ScenarioResult } from '../harness/result';
import { Scope, withScope } from '../harness/scope';
import { adminEtcd, etcdContenders, pollUntil, sleep } from '../harness/util';
import { spawnChaosWorker } from '../harness/workers';

/**
 * A lock outlives a leader failover only if its ttl covers the election (1-2 election timeouts of 1 s here)
 * plus the client moving to another member: 10 s. Waiters keep their own leases alive, with the same margin.
 */
const FAILOVER_TTL = 10_000;
const QUORUM_TTL = 3_000;

/**
 * 6. A 3-member etcd cluster.
 *  a) Waiters queue behind a holder; the leader is SIGKILLed; the holder releases: the waiters are granted
 *     in their queue order, each on the key it queued with (the queue survived the election).
 *  b) Workers increment under the lock while the leader is killed and later restarted: exact final count.
 *  c) Quorum lost (2 of 3 down): a holder is told its lock is lost by the end of its validity, an acquire fails
 *     with LockBackendError within waitTimeout; when the members return, locks are granted again.
 */
export async function etcdClusterScenario(profile: ChaosProfileName): Promise<ScenarioResult> {
  const started = performance.now();
  return withScope(async (scope) => {
    const cluster = scope.defer(await startEtcdCluster(3));
    const checks = new Checks();
    const queue = await queueAcrossFailover(scope, cluster, checks);
    await healAll(cluster);
    const increments = await incrementsAcrossFailover(scope, cluster, checks, profile);
    await healAll(cluster);
    const quorum = await quorumLoss(scope, cluster, checks);
    return {
      scenario: '6 etcd cluster failover',
      backend: 'etcd x3',
      fault: 'leader SIGKILLed (and restarted); 2 of 3 members down',
      figures: {
        'queue order kept across election': queue.kept ? 'yes' : 'no',
        'increments final count': increments.count,
        'lost updates': increments.lost,
        'unavailable after leader kill': ms(increments.recovery),
        'holder told lost after validity (no quorum)': `${quorum.lostVsValidity >= 0 ? '+' : ''}${ms(quorum.lostVsValidity)}`,
        'acquire without quorum': quorum.failure,
        'granted again after members returned': ms(quorum.recovery),
      },
      checks: checks.list,
      durationMs: performance.now() - started,
    };
  });
}

async function healAll(cluster: TestEtcdCluster): Promise<void> {
  for (const member of cluster.members) if (!member.isRunning()) await member.restart();
  await cluster.waitUntilHealthy(60_000);
}

async function queueAcrossFailover(scope: Scope, cluster: TestEtcdCluster, checks: Checks) {
  const register = scope.defer(await startRegister({ fenced: true }));
  const admin = scope.defer(adminEtcd(cluster.endpoints));
  const keyPrefix = chaosNamespace('cluster-queue');
  const prefix = lockPrefix(keyPrefix, 'queue');
  const spawn = (id: string) =>
    spawnChaosWorker({
      id,
      backend: 'etcd',
      address: cluster.endpoints.join(','),
      keyPrefix,
      registerPort: register.port,
      operationTimeout: 10_000,
      task: { type: 'hold', key: 'queue', ttl: FAILOVER_TTL, waitTimeout: 120_000 },
    });
  const holder = spawn('H');
  await holder.message('ready');
  holder.send({ type: 'go' });
  await holder.message('held');
  const waiters = ['Q1', 'Q2', 'Q3'].map(spawn);
  const queuedRevisions: bigint[] = [];
  for (const [index, waiter] of waiters.entries()) {
    await waiter.message('ready');
    waiter.send({ type: 'go' });
    const queued = await pollUntil(
      `${waiter.id} to queue`,
      async () => {
        const keys = await etcdContenders(admin, prefix);
        return keys.length === index + 2 ? keys[index + 1] : undefined;
      },
      30_000,
    );
    queuedRevisions.push(queued.createRevision);
  }
  const leader = await cluster.leader();
  await cluster.members[leader].kill('SIGKILL');
  holder.send({ type: 'release' });
  const granted: bigint[] = [];
  for (const waiter of waiters) {
    const held = await waiter.message('held', 60_000);
    granted.push(BigInt(held.token));
    waiter.send({ type: 'release' });
    await waiter.message('released', 30_000);
  }
  const kept = granted.every((token, index) => token === queuedRevisions[index]);
  checks.that('after the leader was killed, waiters were granted in queue order on the keys they queued with', kept, {
    queued: queuedRevisions,
    granted,
  });
  for (const worker of [holder, ...waiters]) worker.send({ type: 'exit' });
  await Promise.all([holder, ...waiters].map((worker) => worker.message('done', 30_000)));
  return { kept };
}

async function incrementsAcrossFailover(
  scope: Scope,
  cluster: TestEtcdCluster,
  checks: Checks,
  profile: ChaosProfileName,
) {
  const workers = 3;
  const target = sized(profile, 20, 100);
  const run = await startIncrementRun(scope, {
    backend: 'etcd',
    address: cluster.endpoints.join(','),
    workers,
    operationTimeout: 10_000,
    task: { keys: ['counter'], contenders: 1, target, ttl: FAILOVER_TTL, waitTimeout: 120_000, sectionMs: 5 },
  });
  run.go();
  await pollUntil('the first increments', () => run.collector.sections.length >= 3 || run.finished, 60_000);
  const leader = await cluster.leader();
  const killedAt = hrNow();
  await cluster.members[leader].kill('SIGKILL');
  await sleep(4_000);
  await cluster.members[leader].restart();
  await run.done(sized(profile, 180_000, 600_000));
  const report = checkHistory(run.collector.sections, await run.register.client.stats(), [
    { kind: 'leader kill', at: killedAt },
  ]);
  const expected = workers * target;
  checks.that('exact final count across the leader kill', report.finalValue === expected && report.lostUpdates === 0, {
    final: report.finalValue,
    expected,
    lost: report.lostUpdates,
  });
  checks.that(
    'no grant within a live holder’s validity',
    report.unsafeOverlaps.length === 0,
    report.unsafeOverlaps.slice(0, 2),
  );
  return { count: `${report.finalValue}/${expected}`, lost: report.lostUpdates, recovery: report.recoveryMs[0] };
}

async function quorumLoss(scope: Scope, cluster: TestEtcdCluster, checks: Checks) {
  const register = scope.defer(await startRegister({ fenced: true }));
  const keyPrefix = chaosNamespace('cluster-quorum');
  const holder = spawnChaosWorker({
    id: 'H',
    backend: 'etcd',
    address: cluster.endpoints.join(','),
    keyPrefix,
    registerPort: register.port,
    task: { type: 'hold', key: 'quorum', ttl: QUORUM_TTL, waitTimeout: 30_000 },
  });
  await holder.message('ready');
  holder.send({ type: 'go' });
  await holder.message('held');
  const locks = scope.defer(new LockService(new EtcdLockBackend({ hosts: cluster.endpoints }), { keyPrefix }));
  await locks.isLocked('quorum');

  const leader = await cluster.leader();
  const down = [leader, (leader + 1) % 3];
  await Promise.all(down.map((index) => cluster.members[index].kill('SIGKILL')));
  const lost = await holder.message('lost', 30_000);
  const lostVsValidity = msBetween(lost.validUntil, lost.at);
  checks.that(
    'without a quorum, the holder was told its lock is lost by the end of its validity (+1 s)',
    lostVsValidity <= 1_000,
    {
      lostVsValidity,
      reason: lost.reason,
    },
  );
  const waitTimeout = 2_000;
  const attemptStart = performance.now();
  const failure = await locks.acquire('other', { ttl: QUORUM_TTL, waitTimeout }).then(
    () => 'granted',
    (error: Error) => error,
  );
  const failedAfter = performance.now() - attemptStart;
  checks.that(
    'an acquire without a quorum fails with LockBackendError within waitTimeout (+5 s)',
    failure instanceof LockBackendError && failedAfter < waitTimeout + 5_000,
    {
      failure: String(failure),
      failedAfter,
    },
  );

  const restartAt = performance.now();
  await Promise.all(down.map((index) => cluster.members[index].restart()));
  await cluster.waitUntilHealthy(60_000);
  const again = await locks.acquire('other', { ttl: QUORUM_TTL, waitTimeout: 60_000 });
  const recovery = performance.now() - restartAt;
  await again.release();
  checks.that('locks are granted again once the members returned', true);
  holder.send({ type: 'exit' });
  await holder.message('done', 30_000);
  return {
    lostVsValidity,
    failure: failure instanceof Error ? `${failure.name} after ${ms(failedAfter)}` : failure,
    recovery,
  };
}
