import type { ChaosBackendKind } from '../harness/backends';
import { checkHistory, InjectedFault } from '../harness/checker';
import { hrNow } from '../harness/hrtime';
import { startIncrementRun } from '../harness/increment-run';
import { ChaosProfileName, sized } from '../harness/profile';
import { Checks, maxOf, ms, ScenarioResult } from '../harness/result';
import { withScope } from '../harness/scope';
import { startTarget } from '../harness/targets';
import { pollUntil, sleep } from '../harness/util';

const TTL = 2_000;
/** Longer than the ttl plus etcd's lease-expiry lag (up to half a second) plus the next holder's read. */
const BLOCK_MS = 3_500;
const SIGNAL_BOUND_MS = 1_500;
/** A ZooKeeper lock outlives the ttl while the session lives: the block must outlast the session (4 s here). */
const ZOOKEEPER_BLOCK_MS = 5_500;

function blockFor(backend: ChaosBackendKind): number {
  return backend === 'zookeeper' ? ZOOKEEPER_BLOCK_MS : BLOCK_MS;
}

/**
 * 3. Event-loop starvation: a holder blocks its event loop synchronously for 3.5 s (ttl 2 s) between its read
 * and its write: no timer, no renewal, no I/O runs meanwhile. On resume the lock must be reported lost (its
 * validity passed before any renewal could run) and never extended, and its write must not corrupt the register.
 *
 * Across processes another worker holds the lock by then, so the write is refused by fencing. On memory the
 * store lives in the blocked process too: nobody else can be granted during the block, the late write goes
 * out before any other holder reads and is harmless, and only the loss report is checked.
 */
export async function starvationScenario(
  backend: ChaosBackendKind,
  profile: ChaosProfileName,
): Promise<ScenarioResult> {
  const started = performance.now();
  const rounds = sized(profile, 2, 5);
  const contenders = 3;
  return withScope(async (scope) => {
    const target = await startTarget(backend, scope);
    const run = await startIncrementRun(scope, {
      backend,
      address: target.address,
      workers: target.crossProcess ? contenders : 1,
      task: {
        keys: ['counter'],
        contenders: target.crossProcess ? 1 : contenders,
        target: 0,
        ttl: TTL,
        waitTimeout: 120_000,
        sectionMs: 3,
      },
    });
    run.go();
    const faults: InjectedFault[] = [];
    for (let round = 0; round < rounds; round++) {
      await sleep(500);
      const worker = run.workers[Math.floor(Math.random() * run.workers.length)];
      const before = run.collector.sections.filter((section) => section.fault === 'block').length;
      const at = hrNow();
      worker.send({ type: 'arm', fault: { kind: 'block', ms: blockFor(backend) } });
      faults.push({ kind: 'block', at, worker: worker.id });
      await pollUntil(
        'the blocked section to be reported',
        () => run.collector.sections.filter((s) => s.fault === 'block').length > before,
        60_000,
      );
    }
    for (const worker of run.workers) worker.send({ type: 'finish' });
    const summaries = await run.done(120_000);
    const report = checkHistory(run.collector.sections, await run.register.client.stats(), faults);
    const failedAcquires = summaries.reduce(
      (sum, summary) => sum + Object.values(summary.failures).reduce((a, b) => a + b, 0),
      0,
    );
    const blocked = run.collector.sections.filter((section) => section.fault === 'block');

    const checks = new Checks();
    checks.that('every block hit a section', blocked.length === rounds, blocked.length);
    checks.that(
      `every starved holder was told its lock was lost within ${SIGNAL_BOUND_MS} ms of its loop resuming`,
      report.signalDelaysMs.every((delay) => delay !== undefined && delay <= SIGNAL_BOUND_MS),
      report.signalDelaysMs,
    );
    checks.that('no acknowledged update lost', report.lostUpdates === 0, { lost: report.lostUpdates });
    checks.that(
      'no grant within a live holder’s validity',
      report.unsafeOverlaps.length === 0,
      report.unsafeOverlaps.slice(0, 2),
    );
    checks.that(
      'fencing tokens strictly increase in grant order',
      report.tokenOrderViolations === 0,
      report.tokenOrderViolations,
    );
    if (target.crossProcess) {
      checks.that(
        'the starved holders’ writes were refused by fencing',
        report.faultedWritesFenced === rounds,
        report.faultedWritesFenced,
      );
    }
    checks.that(
      'no acquisition failed',
      failedAcquires === 0,
      summaries.map((summary) => summary.failures),
    );
    return {
      scenario: '3 event-loop starvation',
      backend,
      fault: `holder blocks its loop ${blockFor(backend) / 1000} s mid read-modify-write (ttl 2 s${backend === 'zookeeper' ? ', session 4 s' : ''}) x ${rounds}`,
      figures: {
        'critical sections': report.sections,
        overlaps: report.overlaps.length,
        'unsafe overlaps': report.unsafeOverlaps.length,
        'starved writes fenced': `${report.faultedWritesFenced}/${report.faultedSections}`,
        'lost updates': report.lostUpdates,
        'max loss report after resume': ms(maxOf(report.signalDelaysMs)),
      },
      checks: checks.list,
      durationMs: performance.now() - started,
    };
  });
}
