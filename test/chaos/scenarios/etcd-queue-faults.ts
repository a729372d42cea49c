import { lockPrefix } from '../../../lib/backends/etcd/etcd-key-layout';
import { checkHistory } from '../harness/checker';
import { hrNow, msBetween } from '../harness/hrtime';
import { chaosNamespace, startIncrementRun } from '../harness/increment-run';
import { ChaosProfileName, sized } from '../harness/profile';
import { startRegister } from '../harness/register';
import { Checks, maxOf, ms, percentile, ScenarioResult } from '../harness/result';
import { withScope } from '../harness/scope';
import { startTarget } from '../harness/targets';
import { adminEtcd, etcdContenders, pollUntil, sleep } from '../harness/util';
import type { ChaosWorkerMessage } from '../harness/worker-protocol';
import { spawnChaosWorker } from '../harness/workers';

const WAITER_TTL = 2_000;

/**
 * 7. A waiter's lease expires while it is queued (etcd#11456, which the Debian etcd 3.4 server still has:
 * a waiter could be told it holds the lock after its lease had expired). Holder H, then waiters W and C queue
 * behind it. W is SIGSTOPped until its lease (2 s) has expired and its queue key is gone; H releases, so C
 * holds. When W resumes, its watch reports H's deletion: it must re-read its own key, find it gone, and never
 * act on it. It may queue again (with a new key, behind C) and be granted only after C released.
 */
export async function leaseExpiredWhileQueuedScenario(profile: ChaosProfileName): Promise<ScenarioResult> {
  const started = performance.now();
  return withScope(async (scope) => {
    const target = await startTarget('etcd', scope);
    const register = scope.defer(await startRegister({ fenced: true }));
    const admin = scope.defer(adminEtcd(target.address));
    const keyPrefix = chaosNamespace('queued');
    const prefix = lockPrefix(keyPrefix, 'queue');
    const base = { backend: 'etcd' as const, address: target.address, keyPrefix, registerPort: register.port };
    const spawn = (id: string, ttl: number) =>
      spawnChaosWorker({
        ...base,
        id,
        task: { type: 'hold', key: 'queue', ttl, waitTimeout: 60_000, readOnGrant: true },
      });
    const contenders = () => etcdContenders(admin, prefix);

    const holder = spawn('H', 10_000);
    const w = spawn('W', WAITER_TTL);
    const c = spawn('C', WAITER_TTL);
    await Promise.all([holder, w, c].map((worker) => worker.message('ready')));
    holder.send({ type: 'go' });
    const held = await holder.message('held');
    w.send({ type: 'go' });
    const queuedW = await pollUntil(
      'W to queue',
      async () => {
        const queued = await contenders();
        return queued.length === 2 ? queued[1] : undefined;
      },
      20_000,
    );
    c.send({ type: 'go' });
    await pollUntil('C to queue', async () => (await contenders()).length === 3, 20_000);

    // From here W's messages are collected as they come, to see whether it ever claims the lock too early.
    const fromW: Extract<ChaosWorkerMessage, { type: 'held' | 'acquire-failed' }>[] = [];
    w.on('held', (message) => fromW.push(message));
    w.on('acquire-failed', (message) => fromW.push(message));

    const pausedAt = hrNow();
    w.pause();
    await pollUntil(
      'W’s queue key to vanish with its lease',
      async () => !(await contenders()).some((k) => k.key === queuedW.key),
      20_000,
    );
    const vanishedAfter = msBetween(pausedAt, hrNow());
    holder.send({ type: 'release' });
    const cHeld = await c.message('held', 20_000);
    w.resume();
    const resumedAt = hrNow();
    // W had its chance to (wrongly) claim the lock it queued for; C keeps holding meanwhile.
    await sleep(sized(profile, 2_000, 3_000));
    const claimedWhileCHeld = fromW.some((message) => message.type === 'held');
    c.send({ type: 'release' });
    const cReleased = await c.message('released');
    const wOutcome = await pollUntil('W to be granted or to fail', () => fromW[0], 60_000);

    const checks = new Checks();
    checks.that('W never claimed the lock while C held it', !claimedWhileCHeld, fromW);
    if (wOutcome.type === 'held') {
      checks.that('W was granted only after C released', BigInt(wOutcome.acquiredAt) > BigInt(cReleased.at));
      checks.that(
        'W was granted on a new queue key, not the one that vanished',
        BigInt(wOutcome.token) !== queuedW.createRevision,
        {
          granted: wOutcome.token,
          vanished: queuedW.createRevision,
        },
      );
      checks.that('W’s fencing token is above C’s', BigInt(wOutcome.token) > BigInt(cHeld.token));
    } else {
      checks.that('W failed with a typed lock error', /^Lock\w+Error$/.test(wOutcome.name), wOutcome);
    }
    checks.that('C’s token is above the holder’s', BigInt(cHeld.token) > BigInt(held.token));
    const stats = await register.client.stats();
    const report = checkHistory([], stats);
    checks.that('no acknowledged update lost', report.lostUpdates === 0);

    for (const worker of [holder, w, c]) worker.send({ type: 'release' });
    for (const worker of [holder, w, c]) worker.send({ type: 'exit' });
    await Promise.all([holder, w, c].map((worker) => worker.message('done')));
    return {
      scenario: '7 lease expired while queued',
      backend: 'etcd',
      fault: `SIGSTOP a queued waiter (ttl ${WAITER_TTL / 1000} s) until its key expired; its predecessor releases meanwhile`,
      figures: {
        'queue key gone after pause': ms(vanishedAfter),
        'claimed while the next waiter held': claimedWhileCHeld ? 'yes' : 'no',
        'paused waiter then':
          wOutcome.type === 'held'
            ? `re-queued, granted ${ms(msBetween(resumedAt, wOutcome.acquiredAt))} after resuming`
            : wOutcome.name,
      },
      checks: checks.list,
      durationMs: performance.now() - started,
    };
  });
}

/**
 * 8. Watch compaction while waiting: workers increment under one lock while the parent writes and compacts
 * the history to the latest revision every ~100 ms, so waiters' watches start at compacted revisions and are
 * cancelled by the server. Waiters must re-read and re-watch: no hang (bounded waits), no double grant.
 */
export async function compactionScenario(profile: ChaosProfileName): Promise<ScenarioResult> {
  const started = performance.now();
  const workers = 4;
  const increments = sized(profile, 30, 200);
  return withScope(async (scope) => {
    const target = await startTarget('etcd', scope);
    const admin = scope.defer(adminEtcd(target.address));
    const run = await startIncrementRun(scope, {
      backend: 'etcd',
      address: target.address,
      workers,
      task: { keys: ['counter'], contenders: 1, target: increments, ttl: 5_000, waitTimeout: 60_000, sectionMs: 5 },
    });
    run.go();
    let compactions = 0;
    while (!run.finished) {
      const put = await admin.put(`${run.keyPrefix}-junk`).value(String(compactions));
      await admin.kv.compact({ revision: put.header.revision, physical: true }).catch(() => undefined);
      compactions += 1;
      await sleep(100);
    }
    const summaries = await run.done(sized(profile, 120_000, 600_000));
    const report = checkHistory(run.collector.sections, await run.register.client.stats());
    const expected = workers * increments;
    const failed = summaries.reduce(
      (sum, summary) => sum + Object.values(summary.failures).reduce((a, b) => a + b, 0),
      0,
    );
    const waits = run.collector.sections.map((section) => section.waitMs);

    const checks = new Checks();
    checks.that('final count is exact', report.finalValue === expected, { final: report.finalValue, expected });
    checks.that('zero overlapping critical sections', report.overlaps.length === 0, report.overlaps.slice(0, 2));
    checks.that(
      'no acquisition failed or hung',
      failed === 0,
      summaries.map((summary) => summary.failures),
    );
    checks.that('the history was compacted while waiters waited', compactions >= 5, compactions);
    return {
      scenario: '8 watch compaction',
      backend: 'etcd',
      fault: 'compact to the latest revision every ~100 ms while waiters watch',
      figures: {
        'critical sections': report.sections,
        compactions,
        overlaps: report.overlaps.length,
        'final count': `${report.finalValue}/${expected}`,
        'p99 wait': ms(percentile(waits, 99)),
        'max wait': ms(maxOf(waits)),
      },
      checks: checks.list,
      durationMs: performance.now() - started,
    };
  });
}
