import { join } from 'node:path';
import { wallNow } from '../lib/clock';
import { bestOf } from '../lib/compare';
import { Worker } from '../lib/fork';
import { analyzeGrants, GrantAnalysis, GrantRecord } from '../lib/grants';
import { Failure, failedRow, failureNotes, num, Section, Table, times } from '../lib/report';
import { BenchServers, countDelta, total } from '../lib/servers';
import type { AdapterSpec, Role, Store } from '../peers/adapter';
import { contendAll } from './contender';
import type { HotKeyWorkerMessage, HotKeyWorkerPayload } from './hot-key-worker';

export interface HotKeySettings {
  readonly durationMs: number;
  readonly maxGrants: number;
  /** Contender counts in one process. */
  readonly inProcess: readonly number[];
  readonly processes: number;
  readonly contendersPerProcess: number;
  /** Pause of each contender between its release and its next acquire. */
  readonly thinkMs: number;
}

export interface HotKeyRow extends GrantAnalysis {
  readonly name: string;
  readonly store: Store;
  readonly role: Role;
  readonly setup: string;
  readonly serverCallsPerGrant: number;
}

/** Long enough that the lock never expires under a holder inside a run. */
const TTL_MS = 10_000;
const WORKER = join(__dirname, 'hot-key-worker.ts');

/** Scenario 2: one key, many contenders that release as soon as they are granted. */
export async function hotKey(
  servers: BenchServers,
  specs: readonly AdapterSpec[],
  settings: HotKeySettings,
): Promise<{ section: Section; rows: HotKeyRow[] }> {
  const setups = [
    ...settings.inProcess.map((contenders) => ({ label: `${contenders} in 1 process`, contenders, processes: 1 })),
    {
      label: `${settings.processes} processes x ${settings.contendersPerProcess}`,
      contenders: settings.contendersPerProcess,
      processes: settings.processes,
    },
  ];
  const rows: HotKeyRow[] = [];
  const tables: Table[] = [];
  for (const store of ['redis', 'etcd'] as Store[]) {
    const storeSpecs = specs.filter((spec) => spec.store === store);
    for (const setup of setups) {
      const setupRows: HotKeyRow[] = [];
      const failures: Failure[] = [];
      for (const spec of storeSpecs) {
        const run = setup.processes === 1 ? runInProcess : runInProcesses;
        try {
          const row = await run(servers, spec, setup, settings);
          setupRows.push({ ...row, setup: setup.label });
        } catch (error) {
          failures.push({ name: spec.name, error });
        }
      }
      if (storeSpecs.length) tables.push(table(store, setup.label, setupRows, failures));
      rows.push(...setupRows);
    }
  }
  const waiting = specs.map((spec) => `${spec.name}: ${spec.waiting}`);
  return {
    section: {
      heading: '2. One hot key: grants/s, handoff latency, fairness',
      text: [
        `Every contender loops acquire -> release at once (zero hold time) -> think ${settings.thinkMs} ms -> acquire again. ` +
          "The zero hold time makes the figures the lock's own cost; the think time keeps a releaser from retaking the lock before any waiter could. " +
          `Each row runs ${settings.durationMs / 1000} s or ${settings.maxGrants} grants, whichever comes first; ttl ${TTL_MS / 1000} s. ` +
          'Timestamps are performance.timeOrigin + performance.now(), comparable across processes.',
        '',
        "- handoff = a holder's timestamp just before release() -> the first acquire() to resolve among the contenders already waiting then (a releaser that retakes the lock first does not end it).",
        '- inversions = grants that went to a contender while one that had arrived earlier was still waiting (FIFO would give 0).',
        '- max wait includes contenders still waiting when the run stopped. overlaps = a grant before the previous release (must be 0).',
        '- vs limit / vs best peer: grants/s divided by theirs (higher is better); handoff p50 ratios are theirs divided by ours (higher = ours faster).',
        '- server calls/grant: Redis commands (incl. inside scripts) or etcd requests per grant: the polling or herd cost.',
        '',
        'Waiting policies:',
        '',
        ...waiting.map((line) => `- ${line}`),
      ],
      tables,
    },
    rows,
  };
}

type Run = Omit<HotKeyRow, 'setup'>;

interface Setup {
  /** Contenders per process. */
  readonly contenders: number;
  readonly processes: number;
}

async function runInProcess(
  servers: BenchServers,
  spec: AdapterSpec,
  { contenders }: Setup,
  settings: HotKeySettings,
): Promise<Run> {
  const adapter = await spec.create(servers.env, { ttl: TTL_MS });
  const key = `hot:${contenders}`;
  try {
    await adapter.release(await adapter.acquire(`${key}:warm`));
    const before = await servers.counts(spec.store);
    const start = wallNow();
    const until = start + settings.durationMs;
    const stop = { until, remainingGrants: settings.maxGrants, thinkMs: settings.thinkMs };
    let after: Map<string, number> | undefined;
    // Server counters at the end of the window, not after the drain.
    const snapshot = setTimeout(
      () => void servers.counts(spec.store).then((counts) => (after = counts)),
      settings.durationMs,
    );
    const records = await contendAll(adapter, key, contenders, stop);
    clearTimeout(snapshot);
    after ??= await servers.counts(spec.store);
    return finish(spec, records, start, Math.min(until, lastGrantIfCapped(records, settings.maxGrants)), before, after);
  } finally {
    await adapter.close();
  }
}

async function runInProcesses(
  servers: BenchServers,
  spec: AdapterSpec,
  { contenders, processes }: Setup,
  settings: HotKeySettings,
): Promise<Run> {
  const key = `hot:procs`;
  const payload: HotKeyWorkerPayload = { adapter: spec.name, env: servers.env, key, ttl: TTL_MS, contenders };
  const workers = Array.from({ length: processes }, () => Worker.start<HotKeyWorkerMessage>(WORKER, payload));
  try {
    await Promise.all(workers.map((worker) => worker.message('ready')));
    const before = await servers.counts(spec.store);
    // A short lead time, so every process starts on the same clock tick however late its message arrives.
    const start = wallNow() + 50;
    const until = start + settings.durationMs;
    const perProcess = Math.ceil(settings.maxGrants / processes);
    for (const worker of workers)
      worker.send({ type: 'go', start, until, maxGrants: perProcess, thinkMs: settings.thinkMs });
    let after: Map<string, number> | undefined;
    const snapshot = setTimeout(
      () => void servers.counts(spec.store).then((counts) => (after = counts)),
      until - wallNow(),
    );
    const done = await Promise.all(workers.map((worker) => worker.message('done', settings.durationMs + 120_000)));
    clearTimeout(snapshot);
    after ??= await servers.counts(spec.store);
    const records = done.flatMap((message) => message.records);
    return finish(
      spec,
      records,
      start,
      Math.min(until, lastGrantIfCapped(records, perProcess * processes)),
      before,
      after,
    );
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
}

/** When a run stopped on its grant count before the deadline, its window ends at that last grant. */
function lastGrantIfCapped(records: readonly GrantRecord[], cap: number): number {
  if (records.length < cap) return Infinity;
  return Math.max(...records.map((record) => record.grant));
}

function finish(
  spec: AdapterSpec,
  records: GrantRecord[],
  start: number,
  end: number,
  before: Map<string, number>,
  after: Map<string, number>,
): Run {
  const analysis = analyzeGrants(records, start, end);
  const calls = total(countDelta(before, after), (name) => name === 'LeaseKeepAlive streams');
  return {
    name: spec.name,
    store: spec.store,
    role: spec.role,
    ...analysis,
    serverCallsPerGrant: calls / Math.max(1, analysis.grants),
  };
}

function table(store: Store, setup: string, rows: HotKeyRow[], failures: Failure[]): Table {
  const limitRate = bestOf(rows, 'limit', (row) => row.grantsPerSecond, 'higher');
  const peerRate = bestOf(rows, 'peer', (row) => row.grantsPerSecond, 'higher');
  const limitHandoff = bestOf(rows, 'limit', (row) => row.handoff.median, 'lower');
  const peerHandoff = bestOf(rows, 'peer', (row) => row.handoff.median, 'lower');
  const headers = [
    'library',
    'grants/s',
    'vs limit',
    'vs best peer',
    'handoff p50 ms',
    'handoff p99 ms',
    'limit/this p50',
    'best peer/this p50',
    'wait p50 ms',
    'wait p99 ms',
    'max wait ms',
    'inversions',
    'overlaps',
    'server calls/grant',
  ];
  return {
    title: `${store === 'redis' ? 'Redis' : 'etcd'}, ${setup}`,
    notes: failureNotes(failures),
    headers,
    rows: [
      ...rows.map((row) => [
        row.name,
        num(row.grantsPerSecond, 0),
        times(row.grantsPerSecond, limitRate),
        times(row.grantsPerSecond, peerRate),
        num(row.handoff.median, 3),
        num(row.handoff.p99, 3),
        times(limitHandoff, row.handoff.median),
        times(peerHandoff, row.handoff.median),
        num(row.wait.median, 2),
        num(row.wait.p99, 2),
        num(row.maxWait, 0),
        `${row.inversions} (${num((100 * row.inversions) / Math.max(1, row.grants), 0)}%)`,
        String(row.overlaps),
        num(row.serverCallsPerGrant, 1),
      ]),
      ...failures.map((failure) => failedRow(failure, headers.length)),
    ],
  };
}
