import type { ChaosBackendKind } from '../harness/backends';
import { checkHistory } from '../harness/checker';
import { startIncrementRun } from '../harness/increment-run';
import { ChaosProfileName, sized } from '../harness/profile';
import { Checks, maxOf, ms, percentile, ScenarioResult } from '../harness/result';
import { withScope } from '../harness/scope';
import { startTarget } from '../harness/targets';

const CONTENDERS = 200;
const KEYS = 1_000;
const ZIPF_EXPONENT = 1;
/** Cross-process backends spread the contenders over this many worker processes. */
const PROCESSES = 4;

/**
 * 12. Load: 200 contenders over 1 000 keys chosen with a Zipf skew (s = 1: the hottest key draws about 13 %
 * of the requests), each doing acquire -> read -> write -> release as fast as it can, for 60 s (6 s in CI).
 * Reports throughput and wait percentiles; zero overlaps and nothing lost.
 */
export async function loadScenario(backend: ChaosBackendKind, profile: ChaosProfileName): Promise<ScenarioResult> {
  const started = performance.now();
  const durationMs = sized(profile, 6_000, 60_000);
  return withScope(async (scope) => {
    const target = await startTarget(backend, scope);
    const processes = target.crossProcess ? PROCESSES : 1;
    const run = await startIncrementRun(scope, {
      backend,
      address: target.address,
      workers: processes,
      registerHistory: false,
      task: {
        keys: Array.from({ length: KEYS }, (_, rank) => `k${rank}`),
        zipf: ZIPF_EXPONENT,
        contenders: CONTENDERS / processes,
        target: 0,
        durationMs,
        ttl: 10_000,
        waitTimeout: 60_000,
        sectionMs: 0,
      },
    });
    const t0 = performance.now();
    run.go();
    const summaries = await run.done(durationMs + 120_000);
    const elapsed = performance.now() - t0;
    const report = checkHistory(run.collector.sections, await run.register.client.stats());
    const failed = summaries.reduce(
      (sum, summary) => sum + Object.values(summary.failures).reduce((a, b) => a + b, 0),
      0,
    );
    const waits = run.collector.sections.map((section) => section.waitMs);
    const keysUsed = new Set(run.collector.sections.map((section) => section.key)).size;

    const checks = new Checks();
    checks.that('zero overlapping critical sections', report.overlaps.length === 0, report.overlaps.slice(0, 2));
    checks.that('no acknowledged update lost', report.lostUpdates === 0, report.lostUpdates);
    checks.that('no operation refused as stale', report.staleRejected === 0, report.staleRejected);
    checks.that(
      'fencing tokens strictly increase in grant order',
      report.tokenOrderViolations === 0,
      report.tokenOrderViolations,
    );
    checks.that(
      'no acquisition failed',
      failed === 0,
      summaries.map((summary) => summary.failures),
    );
    return {
      scenario: '12 load',
      backend,
      fault: `${CONTENDERS} contenders${target.crossProcess ? ` in ${processes} processes` : ''}, ${KEYS} keys, Zipf s=${ZIPF_EXPONENT}, ${durationMs / 1000} s`,
      figures: {
        'critical sections': report.sections,
        'keys used': keysUsed,
        throughput: `${Math.round((report.sections / elapsed) * 1000)}/s`,
        'p50 wait': ms(percentile(waits, 50)),
        'p99 wait': ms(percentile(waits, 99)),
        'max wait': ms(maxOf(waits)),
        overlaps: report.overlaps.length,
        'lost updates': report.lostUpdates,
      },
      checks: checks.list,
      durationMs: performance.now() - started,
    };
  });
}
