import { join } from 'node:path';
import { wallNow } from '../lib/clock';
import { bestOf } from '../lib/compare';
import { Worker } from '../lib/fork';
import { analyzeGrants, GrantAnalysis, GrantRecord } from '../lib/grants';
import { Failure, failedRow, failureNotes, num, Section, Table, times } from '../lib/report';
import { BenchServers, countDelta, total } from '../lib/servers';
import type { AdapterSpec, Role, Store } from '../peers/adapter';
import type { HotKeyWorkerMessage, HotKeyWorkerPayload } from './hot-key-worker';

export interface CrossProcessSettings {
  /** Measured time per library. */
  readonly durationMs: number;
  readonly processes: number;
  readonly contendersPerProcess: number;
  /** How long each grant holds the lock before its release. */
  readonly holdMs: number;
  /** Libraries not started within this budget (from the scenario's start) are skipped, so the scenario stays bounded. */
  readonly budgetMs: number;
}

export interface CrossProcessRow extends GrantAnalysis {
  readonly name: string;
  readonly store: Store;
  readonly role: Role;
  /** Grants inside the window, per forked process. */
  readonly perProcess: readonly number[];
  /** min over processes of its grants / (total / processes): 1 = every process got its fair share. */
  readonly leastServed: number;
  readonly serverCallsPerGrant: number;
}

/** Long enough that the lock never expires under a holder inside a run. */
const TTL_MS = 10_000;
const WORKER = join(__dirname, 'hot-key-worker.ts');
/** Forking a worker compiles the bench through the register hook: slow on a loaded machine, but bounded. */
const READY_TIMEOUT_MS = 30_000;
/** After the window, the acquires in flight still complete; past this the row fails and its workers are killed. */
const DRAIN_TIMEOUT_MS = 15_000;
/** Effectively no grant cap: the window is bounded by time only (Infinity would not survive JSON). */
const NO_GRANT_CAP = Number.MAX_SAFE_INTEGER;

/** Scenario 6: P processes x C contenders on one key, each grant held for a moment; throughput, waits, per-process share. */
export async function crossProcess(
  servers: BenchServers,
  specs: readonly AdapterSpec[],
  settings: CrossProcessSettings,
): Promise<{ section: Section; rows: CrossProcessRow[] }> {
  const began = wallNow();
  const rows: CrossProcessRow[] = [];
  const failures: Failure[] = [];
  const skipped: string[] = [];
  for (const spec of specs) {
    // The longest a row takes when nothing is slow: its window plus a few seconds to fork and drain.
    if (wallNow() - began + settings.durationMs + 5_000 > settings.budgetMs) {
      skipped.push(spec.name);
      continue;
    }
    try {
      rows.push(await runOne(servers, spec, settings));
    } catch (error) {
      failures.push({ name: spec.name, error });
    }
  }
  const setup = `${settings.processes} processes x ${settings.contendersPerProcess} contenders`;
  const waiting = specs.map((spec) => `${spec.name}: ${spec.waiting}`);
  return {
    section: {
      heading: '6. Cross-process contention: one key, grants held 1 ms',
      text: [
        `${setup} (each process its own client), all on one key. Every contender loops acquire -> hold ${settings.holdMs} ms ` +
          `(a timer, so a little more) -> release -> acquire again at once. Each library runs ${settings.durationMs / 1000} s ` +
          `in fresh processes, one library after another; ttl ${TTL_MS / 1000} s. Timestamps as in scenario 2.`,
        '',
        '- grants/s: grants inside the window, all processes together. The hold time caps it near 1000 / hold.',
        '- wait = asking (just before acquire()) -> granted. max wait includes contenders still waiting when the window closed.',
        `- least-served: the process with the fewest grants, as % of a fair share (total / ${settings.processes}). ` +
          '100 % means every process got as many grants as the others; a lock that lets the releasing process retake it, ' +
          'or that wakes local waiters first, drops it.',
        '- jumped ahead: grants that went to a contender while one that had asked earlier was still waiting (FIFO would give 0 %).',
        '- vs best peer: grants/s over the best peer on the same server (higher is better). overlaps = a grant before the previous release (must be 0).',
        '- server calls/grant: Redis commands (incl. inside scripts) or etcd requests per grant.',
        '',
        'Waiting policies:',
        '',
        ...waiting.map((line) => `- ${line}`),
      ],
      tables: [table(setup, rows, failures, skipped, settings)],
    },
    rows,
  };
}

async function runOne(
  servers: BenchServers,
  spec: AdapterSpec,
  settings: CrossProcessSettings,
): Promise<CrossProcessRow> {
  const payload: HotKeyWorkerPayload = {
    adapter: spec.name,
    env: servers.env,
    key: 'xproc',
    ttl: TTL_MS,
    contenders: settings.contendersPerProcess,
  };
  const workers = Array.from({ length: settings.processes }, () => Worker.start<HotKeyWorkerMessage>(WORKER, payload));
  let finished = false;
  try {
    await Promise.all(workers.map((worker) => worker.message('ready', READY_TIMEOUT_MS)));
    const before = await servers.counts(spec.store);
    // A short lead time, so every process starts on the same clock tick however late its message arrives.
    const start = wallNow() + 50;
    const until = start + settings.durationMs;
    for (const worker of workers) {
      worker.send({ type: 'go', start, until, maxGrants: NO_GRANT_CAP, thinkMs: 0, holdMs: settings.holdMs });
    }
    let after: Map<string, number> | undefined;
    // Server counters at the end of the window, not after the drain.
    const snapshot = setTimeout(
      () => void servers.counts(spec.store).then((counts) => (after = counts)),
      until - wallNow(),
    );
    const done = await Promise.all(
      workers.map((worker) => worker.message('done', settings.durationMs + DRAIN_TIMEOUT_MS)),
    );
    clearTimeout(snapshot);
    after ??= await servers.counts(spec.store);
    finished = true;
    return toRow(
      spec,
      done.map((message) => message.records),
      start,
      until,
      before,
      after,
    );
  } finally {
    // A clean run lets workers close their clients; after a failure nothing is worth waiting for.
    await Promise.all(workers.map((worker) => (finished ? worker.stop() : worker.kill())));
  }
}

function toRow(
  spec: AdapterSpec,
  byProcess: readonly GrantRecord[][],
  start: number,
  end: number,
  before: Map<string, number>,
  after: Map<string, number>,
): CrossProcessRow {
  const analysis = analyzeGrants(byProcess.flat(), start, end);
  const perProcess = byProcess.map(
    (records) => records.filter((record) => record.grant >= start && record.grant <= end).length,
  );
  const fairShare = analysis.grants / byProcess.length;
  const calls = total(countDelta(before, after), (name) => name === 'LeaseKeepAlive streams');
  return {
    name: spec.name,
    store: spec.store,
    role: spec.role,
    ...analysis,
    perProcess,
    leastServed: fairShare > 0 ? Math.min(...perProcess) / fairShare : NaN,
    serverCallsPerGrant: calls / Math.max(1, analysis.grants),
  };
}

function table(
  setup: string,
  rows: CrossProcessRow[],
  failures: Failure[],
  skipped: string[],
  settings: CrossProcessSettings,
): Table {
  const headers = [
    'library',
    'grants/s',
    'vs best peer',
    'wait p50 ms',
    'wait p99 ms',
    'max wait ms',
    'least-served % of fair share',
    'grants per process',
    'jumped ahead',
    'overlaps',
    'server calls/grant',
  ];
  const skippedNotes = skipped.length
    ? [`**skipped** (the scenario's ${settings.budgetMs / 1000} s budget was spent): ${skipped.join(', ')}`]
    : [];
  return {
    title: `${setup}, hold ${settings.holdMs} ms, ${settings.durationMs / 1000} s per library`,
    notes: [...failureNotes(failures), ...skippedNotes],
    headers,
    rows: [
      ...rows.map((row) => {
        const peerRate = bestOf(
          rows.filter((other) => other.store === row.store),
          'peer',
          (other) => other.grantsPerSecond,
          'higher',
        );
        return [
          row.name,
          num(row.grantsPerSecond, 0),
          times(row.grantsPerSecond, peerRate),
          num(row.wait.median, 2),
          num(row.wait.p99, 2),
          num(row.maxWait, 0),
          `${num(row.leastServed * 100, 0)} %`,
          row.perProcess.join(' / '),
          `${num((100 * row.inversions) / Math.max(1, row.grants), 0)} %`,
          String(row.overlaps),
          num(row.serverCallsPerGrant, 1),
        ];
      }),
      ...failures.map((failure) => failedRow(failure, headers.length)),
    ],
  };
}
