import { checkHistory, InjectedFault } from '../harness/checker';
import { hrNow } from '../harness/hrtime';
import { startIncrementRun } from '../harness/increment-run';
import { ChaosProfileName, sized } from '../harness/profile';
import { Checks, ms, ScenarioResult } from '../harness/result';
import { withScope } from '../harness/scope';
import { startTarget } from '../harness/targets';
import { adminRedis, parseInfo, sleep, statField } from '../harness/util';

const TTL = 2_000;
/** Scripts a worker can run: acquire, extend, release, and leave (a waiter giving up its writer's intent). */
const SCRIPTS_PER_CLIENT = 4;

interface ScriptStats {
  noscript: number;
  evals: number;
  evalshas: number;
}

/**
 * 4. A single Redis, without persistence, crashes (SIGKILL) and restarts empty, twice, while workers increment
 * under the lock; then SCRIPT FLUSH. The restarted server forgot every lock, so a second holder can be
 * granted while the first still trusts its validity: such a double grant must be caught by fencing (tokens
 * keep increasing across the restart: they come from the server clock), and nothing acknowledged may be lost.
 * Reports the unavailability window (crash to the next grant) and what NOSCRIPT cost: each NOSCRIPT reply is
 * followed by at most one EVAL, and a client meets it at most once per script.
 */
export async function redisRestartScenario(
  profile: ChaosProfileName,
  backend: 'redis' | 'redis-node' = 'redis',
): Promise<ScenarioResult> {
  const started = performance.now();
  const workers = sized(profile, 4, 8);
  return withScope(async (scope) => {
    const target = await startTarget(backend, scope);
    const server = target.redis!;
    const run = await startIncrementRun(scope, {
      backend,
      address: target.address,
      workers,
      task: { keys: ['counter'], contenders: 1, target: 0, ttl: TTL, waitTimeout: 120_000, sectionMs: 3 },
    });
    run.go();
    const faults: InjectedFault[] = [];
    const perFault: ScriptStats[] = [];
    const downtime: number[] = [];
    for (let restart = 0; restart < 2; restart++) {
      await sleep(2_000);
      const at = hrNow();
      await server.kill('SIGKILL');
      await server.restart();
      const backAt = hrNow();
      downtime.push(Number(backAt - at) / 1e6);
      faults.push({ kind: 'restart', at, grantsAfter: backAt });
      await sleep(3_000);
      perFault.push(await scriptStats(server.url));
    }
    // SCRIPT FLUSH: the server stays up, only its script cache goes.
    const admin = scope.defer(adminRedis(server.url));
    const beforeFlush = await scriptStats(server.url);
    await admin.script('FLUSH');
    await sleep(2_000);
    const afterFlush = await scriptStats(server.url);
    perFault.push({
      noscript: afterFlush.noscript - beforeFlush.noscript,
      evals: afterFlush.evals - beforeFlush.evals,
      evalshas: afterFlush.evalshas - beforeFlush.evalshas,
    });

    for (const worker of run.workers) worker.send({ type: 'finish' });
    const summaries = await run.done(120_000);
    const report = checkHistory(run.collector.sections, await run.register.client.stats(), faults);
    const failedAcquires = summaries.reduce(
      (sum, summary) => sum + Object.values(summary.failures).reduce((a, b) => a + b, 0),
      0,
    );
    const noscriptFailures = run.collector.failures.filter((failure) => /NOSCRIPT/.test(failure.message));
    const afterRestarts = run.collector.sections.filter((section) => BigInt(section.acquiredAt) > faults[1].at).length;

    const checks = new Checks();
    checks.that('no acknowledged update lost', report.lostUpdates === 0, { lost: report.lostUpdates });
    checks.that(
      'fencing tokens keep increasing across restarts',
      report.tokenOrderViolations === 0,
      report.tokenOrderViolations,
    );
    checks.that('locks were granted again after the restarts', afterRestarts > 0, afterRestarts);
    checks.that('no operation failed with NOSCRIPT', noscriptFailures.length === 0, noscriptFailures.slice(0, 2));
    checks.that(
      'each NOSCRIPT cost at most one EVAL, and each client met it at most once per script',
      perFault.every((stats) => stats.evals <= stats.noscript && stats.noscript <= workers * SCRIPTS_PER_CLIENT),
      perFault,
    );
    return {
      scenario: '4 redis restarted',
      backend,
      fault: 'SIGKILL + restart empty (no persistence) x 2, then SCRIPT FLUSH',
      figures: {
        'critical sections': report.sections,
        'double grants (server forgot the lock)': report.unsafeOverlaps.length,
        'stale ops rejected': report.staleRejected,
        'lost updates': report.lostUpdates,
        'server down': downtime.map((value) => ms(value)).join(', '),
        'unavailable (crash to next grant)': report.recoveryMs.map((value) => ms(value)).join(', '),
        'failed acquisitions': failedAcquires,
        'NOSCRIPT replies / EVAL retries': perFault.map((stats) => `${stats.noscript}/${stats.evals}`).join(', '),
      },
      checks: checks.list,
      durationMs: performance.now() - started,
    };
  });
}

async function scriptStats(url: string): Promise<ScriptStats> {
  const admin = adminRedis(url);
  try {
    const commands = parseInfo(await admin.info('commandstats'));
    const errors = parseInfo(await admin.info('errorstats'));
    return {
      noscript: statField(errors.get('errorstat_NOSCRIPT'), 'count'),
      evals: statField(commands.get('cmdstat_eval'), 'calls'),
      evalshas: statField(commands.get('cmdstat_evalsha'), 'calls'),
    };
  } finally {
    await admin.stop();
  }
}
