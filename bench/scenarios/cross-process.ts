import { join } from 'node:path';
import { wallNow } from '../lib/clock';
import { Worker } from '../lib/fork';
import { analyzeWindows, GrantAnalysis, GrantRecord } from '../lib/grants';
import { Failure, failedRow, failureNotes, num, Section, Table, times } from '../lib/report';
import { inRounds } from '../lib/rounds';
import { BenchServers, countDelta, total } from '../lib/servers';
import { summarize } from '../lib/stats';
import type { AdapterSpec, Role, Store } from '../peers/adapter';
import type { HotKeyWorkerMessage, HotKeyWorkerPayload } from './hot-key-worker';

export interface CrossProcessSettings {
  /** Measured time per library in each round. */
  readonly windowMs: number;
  /** Each library runs one window per round, in turn with the others (see inRounds). */
  readonly rounds: number;
  readonly processes: number;
  readonly contendersPerProcess: number;
  /** How long each grant holds the lock before its release. */
  readonly holdMs: number;
}

export interface CrossProcessRow extends GrantAnalysis {
  readonly name: string;
  readonly store: Store;
  readonly role: Role;
  /** Grants inside the windows, per forked process. */
  readonly perProcess: readonly number[];
  /** min over processes of its grants / (total / processes): 1 = every process got its fair share. */
  readonly leastServed: number;
  readonly serverCallsPerGrant: number;
  /** grants/s of each round's window, in round order (for per-round ratios, see roundRatio). */
  readonly roundRates: readonly number[];
}

/** Long enough that the lock never expires under a holder inside a run. */
const TTL_MS = 10_000;
const WORKER = join(__dirname, 'hot-key-worker.ts');
/** Forking a worker compiles the bench through the register hook: slow on a loaded machine, but bounded. */
const READY_TIMEOUT_MS = 30_000;
/** After a window, the acquires in flight still complete; past this the library fails and its workers are killed. */
const DRAIN_TIMEOUT_MS = 15_000;
/** Effectively no grant cap: the window is bounded by time only (Infinity would not survive JSON). */
const NO_GRANT_CAP = Number.MAX_SAFE_INTEGER;

type HotKeyWorker = ReturnType<typeof Worker.start<HotKeyWorkerMessage>>;

interface GrantWindowOf {
  /** Records of each process, in worker order. */
  readonly byProcess: readonly GrantRecord[][];
  readonly start: number;
  readonly end: number;
  /** Server calls during the window. */
  readonly calls: number;
}

interface State {
  readonly spec: AdapterSpec;
  readonly workers: readonly HotKeyWorker[];
  readonly windows: GrantWindowOf[];
}

/**
 * Scenario 6: P processes x C contenders on one key, each grant held for a moment; throughput, waits, per-process
 * share. Every library keeps its processes for the whole scenario and runs one window per round, in turn with the
 * others: this VM's speed drifts by up to a third within a minute, and a ratio taken within one round cancels that.
 */
export async function crossProcess(
  servers: BenchServers,
  specs: readonly AdapterSpec[],
  settings: CrossProcessSettings,
): Promise<{ section: Section; rows: CrossProcessRow[] }> {
  const entrants = await inRounds<State>(specs, {
    rounds: settings.rounds,
    open: (spec) => open(servers, spec, settings),
    slice: (state) => runWindow(servers, state, settings),
    close: (state) =>
      Promise.all(
        state.workers.map((worker) => (state.windows.length === settings.rounds ? worker.stop() : worker.kill())),
      ).then(() => undefined),
  });
  const rows: CrossProcessRow[] = [];
  const failures: Failure[] = [];
  for (const entrant of entrants) {
    if (entrant.error !== undefined || !entrant.state) failures.push({ name: entrant.spec.name, error: entrant.error });
    else rows.push(toRow(entrant.state));
  }
  const setup = `${settings.processes} processes x ${settings.contendersPerProcess} contenders`;
  const waiting = specs.map((spec) => `${spec.name}: ${spec.waiting}`);
  return {
    section: {
      heading: '6. Cross-process contention: one key, grants held 1 ms',
      text: [
        `${setup} (each process its own client), all on one key. Every contender loops acquire -> hold ${settings.holdMs} ms ` +
          `(a timer, so a little more) -> release -> acquire again at once. Every library keeps its processes for the ` +
          `whole scenario and runs ${settings.rounds} windows of ${settings.windowMs / 1000} s, one per round, in turn with ` +
          `the others (the order rotates each round); ttl ${TTL_MS / 1000} s. Timestamps as in scenario 2.`,
        '',
        "- grants/s: grants inside the windows, all processes together, over the windows' total time. The hold time caps it near 1000 / hold.",
        "- vs best peer: the median over the rounds of grants/s divided by the best peer's (by grants/s over all windows) in the same round, on the same server; higher is better. This VM's speed drifts by up to a third within a minute, so a ratio within one round is the comparable figure.",
        '- wait = asking (just before acquire()) -> granted, pooled over the windows. max wait includes contenders still waiting when a window closed.',
        `- least-served: the process with the fewest grants, as % of a fair share (total / ${settings.processes}). ` +
          '100 % means every process got as many grants as the others; a lock that lets the releasing process retake it, ' +
          'or that wakes local waiters first, drops it.',
        '- jumped ahead: grants that went to a contender while one that had asked earlier was still waiting (FIFO would give 0 %).',
        '- overlaps = a grant before the previous release (must be 0).',
        '- server calls/grant: Redis commands (incl. inside scripts) or etcd requests per grant.',
        '- mean hold: grant -> release stamp (the timer). hold-only ceiling = 1000 / mean hold: the grants/s if every handoff took no time at all, which no lock reaches.',
        '',
        'Waiting policies:',
        '',
        ...waiting.map((line) => `- ${line}`),
      ],
      tables: [table(setup, rows, failures, settings)],
    },
    rows,
  };
}

/** The peer with the most grants/s over all windows on `store`. */
export function bestPeer(rows: readonly CrossProcessRow[], store: Store): CrossProcessRow | undefined {
  return rows
    .filter((row) => row.role === 'peer' && row.store === store)
    .reduce<CrossProcessRow | undefined>(
      (best, row) => (best && best.grantsPerSecond >= row.grantsPerSecond ? best : row),
      undefined,
    );
}

/** grants/s if every handoff took no time: one hold after the other. */
export function holdCeiling(row: Pick<CrossProcessRow, 'meanHold'>): number {
  return 1000 / row.meanHold;
}

/** Median over the rounds of `mine`'s grants/s divided by `other`'s in the same round. */
export function roundRatio(mine: CrossProcessRow, other: CrossProcessRow): number {
  if (mine.roundRates.length !== other.roundRates.length) return NaN;
  return summarize(mine.roundRates.map((rate, round) => rate / other.roundRates[round])).median;
}

async function open(servers: BenchServers, spec: AdapterSpec, settings: CrossProcessSettings): Promise<State> {
  const payload: HotKeyWorkerPayload = {
    adapter: spec.name,
    env: servers.env,
    key: 'xproc',
    ttl: TTL_MS,
    contenders: settings.contendersPerProcess,
    windows: settings.rounds,
  };
  const workers = Array.from({ length: settings.processes }, () => Worker.start<HotKeyWorkerMessage>(WORKER, payload));
  const state: State = { spec, workers, windows: [] };
  try {
    await Promise.all(workers.map((worker) => worker.message('ready', READY_TIMEOUT_MS)));
  } catch (error) {
    await Promise.all(workers.map((worker) => worker.kill()));
    throw error;
  }
  return state;
}

async function runWindow(servers: BenchServers, state: State, settings: CrossProcessSettings): Promise<void> {
  const before = await servers.counts(state.spec.store);
  // A short lead time, so every process starts on the same clock tick however late its message arrives.
  const start = wallNow() + 50;
  const end = start + settings.windowMs;
  for (const worker of state.workers) {
    worker.send({ type: 'go', start, until: end, maxGrants: NO_GRANT_CAP, thinkMs: 0, holdMs: settings.holdMs });
  }
  let after: Map<string, number> | undefined;
  // Server counters at the end of the window, not after the drain.
  const snapshot = setTimeout(
    () => void servers.counts(state.spec.store).then((counts) => (after = counts)),
    end - wallNow(),
  );
  try {
    const done = await Promise.all(
      state.workers.map((worker) => worker.message('done', settings.windowMs + DRAIN_TIMEOUT_MS)),
    );
    after ??= await servers.counts(state.spec.store);
    const calls = total(countDelta(before, after), (name) => name === 'LeaseKeepAlive streams');
    state.windows.push({ byProcess: done.map((message) => message.records), start, end, calls });
  } finally {
    clearTimeout(snapshot);
  }
}

function toRow(state: State): CrossProcessRow {
  const { spec, windows } = state;
  const analysis = analyzeWindows(
    windows.map((window) => ({ records: window.byProcess.flat(), start: window.start, end: window.end })),
  );
  const perProcess = state.workers.map((_, process) =>
    windows.reduce((sum, window) => sum + grantsIn(window.byProcess[process], window), 0),
  );
  const fairShare = analysis.grants / perProcess.length;
  const calls = windows.reduce((sum, window) => sum + window.calls, 0);
  return {
    name: spec.name,
    store: spec.store,
    role: spec.role,
    ...analysis,
    perProcess,
    leastServed: fairShare > 0 ? Math.min(...perProcess) / fairShare : NaN,
    serverCallsPerGrant: calls / Math.max(1, analysis.grants),
    roundRates: windows.map(
      (window) =>
        (window.byProcess.reduce((sum, records) => sum + grantsIn(records, window), 0) * 1000) /
        (window.end - window.start),
    ),
  };
}

/** Grants of `records` inside the window (contenders still waiting at its end are granted after it). */
function grantsIn(records: readonly GrantRecord[], window: GrantWindowOf): number {
  return records.filter((record) => record.grant >= window.start && record.grant <= window.end).length;
}

function table(setup: string, rows: CrossProcessRow[], failures: Failure[], settings: CrossProcessSettings): Table {
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
    'mean hold ms',
    'hold-only ceiling grants/s',
  ];
  return {
    title: `${setup}, hold ${settings.holdMs} ms, ${settings.rounds} x ${settings.windowMs / 1000} s per library`,
    notes: failureNotes(failures),
    headers,
    rows: [
      ...rows.map((row) => {
        const peer = bestPeer(rows, row.store);
        return [
          row.name,
          num(row.grantsPerSecond, 0),
          peer ? times(roundRatio(row, peer), 1) : 'n/a',
          num(row.wait.median, 2),
          num(row.wait.p99, 2),
          num(row.maxWait, 0),
          `${num(row.leastServed * 100, 0)} %`,
          row.perProcess.join(' / '),
          `${num((100 * row.inversions) / Math.max(1, row.grants), 0)} %`,
          String(row.overlaps),
          num(row.serverCallsPerGrant, 1),
          num(row.meanHold, 3),
          num(holdCeiling(row), 0),
        ];
      }),
      ...failures.map((failure) => failedRow(failure, headers.length)),
    ],
  };
}
