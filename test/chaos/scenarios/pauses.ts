import { readFile } from 'node:fs/promises';
import type { ChaosBackendKind } from '../harness/backends';
import { checkHistory, InjectedFault } from '../harness/checker';
import { hrNow } from '../harness/hrtime';
import { IncrementRun, startIncrementRun } from '../harness/increment-run';
import { ChaosProfileName, sized } from '../harness/profile';
import { Checks, maxOf, ms, ScenarioResult } from '../harness/result';
import { withScope } from '../harness/scope';
import { startTarget } from '../harness/targets';
import { pollUntil, sleep } from '../harness/util';
import type { ChaosWorker } from '../harness/workers';

const TTL = 2_000;
const SHORTEST_PAUSE = 2_500;
const LONGEST_PAUSE = 4_000;
const CONTROL_PAUSE = 3_500;

/**
 * A ZooKeeper lock lives as long as its holder's session, not its ttl (the ttl only bounds the validity the
 * handle promises). Another holder can get in only once the server expired the paused client's session
 * (4 s in the harness), so its pauses are longer.
 */
function pausesFor(backend: ChaosBackendKind): { shortest: number; longest: number; control: number } {
  return backend === 'zookeeper'
    ? { shortest: 5_000, longest: 6_500, control: 6_000 }
    : { shortest: SHORTEST_PAUSE, longest: LONGEST_PAUSE, control: CONTROL_PAUSE };
}
/** The watchdog's timer is overdue when the process resumes: it must notice at once, not a period later. */
const SIGNAL_BOUND_MS = 1_500;

export interface PauseOptions {
  /** false: the control run, whose register accepts stale tokens. It must show lost updates. */
  readonly fenced: boolean;
}

/**
 * 2. Process pauses, as in Jepsen's etcd lock test. Workers increment the register under a 2 s lock; in each
 * round a random worker freezes itself with SIGSTOP between its read and its write (the worst moment) and
 * the parent sends SIGCONT 2.5-4 s later (spread evenly over the rounds, in random order). By then its lease
 * is gone and another worker holds the lock. Its write must be refused by fencing, nothing acknowledged may
 * be lost, and its lock.signal must fire as soon as it resumes.
 *
 * The control run uses a register that accepts stale tokens: the same pauses must then lose updates, which
 * proves the checker catches a violation.
 */
export async function pausesScenario(
  backend: ChaosBackendKind,
  profile: ChaosProfileName,
  options: PauseOptions,
): Promise<ScenarioResult> {
  const started = performance.now();
  const rounds = options.fenced ? sized(profile, 3, 10) : sized(profile, 2, 4);
  const workers = sized(profile, 4, 8);
  return withScope(async (scope) => {
    const target = await startTarget(backend, scope);
    if (!target.crossProcess)
      throw new Error(`${backend} locks live in one process: SIGSTOP would freeze every holder at once`);
    const run = await startIncrementRun(scope, {
      backend,
      address: target.address,
      workers,
      fenced: options.fenced,
      task: { keys: ['counter'], contenders: 1, target: 0, ttl: TTL, waitTimeout: 120_000, sectionMs: 3 },
    });
    run.go();
    const faults: InjectedFault[] = [];
    // The control run's pauses are all long: with the register unfenced, a loss must be certain.
    const range = pausesFor(backend);
    const pauses = options.fenced
      ? spread(rounds, range.shortest, range.longest)
      : Array.from({ length: rounds }, () => range.control);
    for (const pauseMs of pauses) {
      await sleep(500);
      faults.push(await pauseOneHolder(run, pauseMs));
    }
    // Let the last paused worker's section finish, then stop everyone.
    await sleep(1_000);
    for (const worker of run.workers) worker.send({ type: 'finish' });
    const summaries = await run.done(120_000);
    const report = checkHistory(run.collector.sections, await run.register.client.stats(), faults);
    const failedAcquires = summaries.reduce(
      (sum, summary) => sum + Object.values(summary.failures).reduce((a, b) => a + b, 0),
      0,
    );

    const checks = new Checks();
    checks.that('every injected pause hit a section', report.faultedSections === rounds, report.faultedSections);
    if (options.fenced) {
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
      // The longer pauses certainly outlast the lease plus the next holder's read.
      checks.that('paused holders’ writes were refused by fencing', report.faultedWritesFenced >= 1, report);
      const delays = report.signalDelaysMs;
      checks.that(
        `every paused holder’s signal fired within ${SIGNAL_BOUND_MS} ms of resuming`,
        delays.every((delay) => delay !== undefined && delay <= SIGNAL_BOUND_MS),
        delays,
      );
      checks.that(
        'no acquisition failed',
        failedAcquires === 0,
        summaries.map((summary) => summary.failures),
      );
    } else {
      checks.that('the unfenced control run loses acknowledged updates (the checker sees it)', report.lostUpdates > 0, {
        lost: report.lostUpdates,
        staleAccepted: report.staleAccepted,
      });
    }
    return {
      scenario: options.fenced ? '2 pauses' : '2 pauses, unfenced control',
      backend,
      fault: `SIGSTOP a holder mid read-modify-write for ${describePauses(backend, options.fenced)} (ttl 2 s${backend === 'zookeeper' ? ', session 4 s' : ''}) x ${rounds}`,
      figures: {
        'critical sections': report.sections,
        overlaps: report.overlaps.length,
        'unsafe overlaps': report.unsafeOverlaps.length,
        'stale ops rejected': report.staleRejected,
        'stale ops accepted': report.staleAccepted,
        'paused writes fenced': `${report.faultedWritesFenced}/${report.faultedSections}`,
        'lost updates': report.lostUpdates,
        'max signal delay after resume': ms(maxOf(report.signalDelaysMs)),
        'max time until another holder': ms(maxOf(report.recoveryMs)),
      },
      checks: checks.list,
      durationMs: performance.now() - started,
    };
  });
}

function describePauses(backend: ChaosBackendKind, fenced: boolean): string {
  const range = pausesFor(backend);
  return fenced ? `${range.shortest / 1000}-${range.longest / 1000} s` : `${range.control / 1000} s`;
}

/** Arms a random worker to SIGSTOP itself at its next read, and SIGCONTs it `pauseMs` later. */
async function pauseOneHolder(run: IncrementRun, pauseMs: number): Promise<InjectedFault> {
  const worker = run.workers[Math.floor(Math.random() * run.workers.length)];
  const stopping = nextStopping(worker);
  worker.send({ type: 'arm', fault: { kind: 'stop' } });
  const at = BigInt(await stopping);
  // The worker said it is stopping, then stopped itself; wait until the kernel shows it stopped.
  await pollUntil(`worker ${worker.id} to be stopped`, () => isStopped(worker.pid), 5_000, 10);
  await sleep(Math.max(0, pauseMs - Number(hrNow() - at) / 1e6));
  worker.resume();
  return { kind: 'pause', at, worker: worker.id };
}

function nextStopping(worker: ChaosWorker): Promise<string> {
  return worker.message('stopping', 60_000).then((message) => message.at);
}

/** State 'T' (stopped) in /proc/<pid>/stat. */
async function isStopped(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return /\) T /.test(stat);
}

/** `count` values evenly from `low` to `high`, shuffled. */
function spread(count: number, low: number, high: number): number[] {
  const values = Array.from({ length: count }, (_, i) => (count === 1 ? high : low + ((high - low) * i) / (count - 1)));
  for (let i = values.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [values[i], values[j]] = [values[j], values[i]];
  }
  return values;
}
