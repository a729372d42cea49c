import type { ChaosBackendKind } from '../harness/backends';
import { checkHistory } from '../harness/checker';
import { startIncrementRun } from '../harness/increment-run';
import { ChaosProfileName, sized } from '../harness/profile';
import { Checks, ms, percentile, ScenarioResult } from '../harness/result';
import { withScope } from '../harness/scope';
import { startTarget } from '../harness/targets';
import { msBetween } from '../harness/hrtime';

/**
 * 1. Baseline, no fault: N worker processes x M read-modify-writes of one register under one lock.
 * Final count exact, zero overlaps, fencing tokens strictly increasing in grant order, nothing refused.
 * Memory runs its contenders as async loops in one worker process (its locks live in one process).
 */
export async function baselineScenario(backend: ChaosBackendKind, profile: ChaosProfileName): Promise<ScenarioResult> {
  const started = performance.now();
  const contenders = sized(profile, 6, 20);
  const increments = sized(profile, 40, 500);
  return withScope(async (scope) => {
    const target = await startTarget(backend, scope);
    const run = await startIncrementRun(scope, {
      backend,
      address: target.address,
      workers: target.crossProcess ? contenders : 1,
      task: {
        keys: ['counter'],
        contenders: target.crossProcess ? 1 : contenders,
        target: increments,
        ttl: 10_000,
        waitTimeout: 120_000,
        sectionMs: 1,
      },
    });
    const t0 = performance.now();
    run.go();
    const summaries = await run.done(sized(profile, 240_000, 1_800_000));
    const elapsed = performance.now() - t0;
    const report = checkHistory(run.collector.sections, await run.register.client.stats());
    const expected = contenders * increments;
    const failed = summaries.reduce(
      (sum, summary) => sum + Object.values(summary.failures).reduce((a, b) => a + b, 0),
      0,
    );
    const waits = run.collector.sections.map((section) => section.waitMs);
    const holds = run.collector.sections.map((section) => msBetween(section.acquiredAt, section.releasedAt));

    const checks = new Checks();
    checks.that('final count is exact', report.finalValue === expected, { final: report.finalValue, expected });
    checks.that('every increment acknowledged once', report.acknowledged === expected, {
      acknowledged: report.acknowledged,
    });
    checks.that('zero overlapping critical sections', report.overlaps.length === 0, report.overlaps.slice(0, 3));
    checks.that(
      'fencing tokens strictly increase in grant order',
      report.tokenOrderViolations === 0,
      report.tokenOrderViolations,
    );
    checks.that('no operation refused as stale', report.staleRejected === 0, report.staleRejected);
    checks.that(
      'no acquisition failed',
      failed === 0,
      summaries.map((summary) => summary.failures),
    );
    return {
      scenario: '1 baseline',
      backend,
      fault: 'none',
      figures: {
        contenders: `${contenders} ${target.crossProcess ? 'processes' : 'loops in 1 process'}`,
        'critical sections': report.sections,
        'final count': `${report.finalValue}/${expected}`,
        overlaps: report.overlaps.length,
        'token order violations': report.tokenOrderViolations,
        'lost updates': report.lostUpdates,
        throughput: `${Math.round((report.sections / elapsed) * 1000)}/s`,
        'p99 wait': ms(percentile(waits, 99)),
        'p50 hold': ms(percentile(holds, 50)),
      },
      checks: checks.list,
      durationMs: performance.now() - started,
    };
  });
}
