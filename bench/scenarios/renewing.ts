import { join } from 'node:path';
import { bestOf } from '../lib/compare';
import { Worker } from '../lib/fork';
import { Failure, failedRow, failureNotes, num, Section, Table, times } from '../lib/report';
import { BenchServers, countDelta, total } from '../lib/servers';
import type { AdapterSpec, Role, Store } from '../peers/adapter';
import type { RenewingWorkerMessage, RenewingWorkerPayload } from './renewing-worker';

export interface RenewingSettings {
  readonly locks: number;
  readonly windowMs: number;
  readonly ttlMs: number;
  readonly concurrency: number;
}

export interface RenewingRow {
  readonly name: string;
  readonly store: Store;
  readonly role: Role;
  readonly acquired: number;
  readonly acquireError?: string;
  readonly acquireMs: number;
  readonly heapPerLockBytes: number;
  readonly elu: number;
  readonly cpuMsPerSecond: number;
  readonly callsPerSecond: number;
  readonly topCalls: string;
  readonly lost: number;
  readonly releaseMs: number;
}

const WORKER = join(__dirname, 'renewing-worker.ts');

/** Scenario 4: many locks held at once, kept alive by each library's own renewal. */
export async function renewing(
  servers: BenchServers,
  specs: readonly AdapterSpec[],
  settings: RenewingSettings,
): Promise<{ section: Section; rows: RenewingRow[] }> {
  const rows: RenewingRow[] = [];
  const failures: (Failure & { store: Store })[] = [];
  for (const spec of specs) {
    try {
      rows.push(await measure(servers, spec, settings));
    } catch (error) {
      failures.push({ name: spec.name, store: spec.store, error });
    }
  }
  const tables = (['redis', 'etcd'] as Store[])
    .filter((store) => specs.some((spec) => spec.store === store))
    .map((store) =>
      table(
        store,
        rows.filter((row) => row.store === store),
        failures.filter((failure) => failure.store === store),
        settings,
      ),
    );
  const renewalsPerSecond = settings.locks / (settings.ttlMs / 3 / 1000);
  return {
    section: {
      heading: `4. ${settings.locks.toLocaleString('en-US')} held locks renewing`,
      text: [
        `Each library runs in its own process (node --expose-gc), acquires ${settings.locks.toLocaleString('en-US')} locks with ttl ${settings.ttlMs / 1000} s ` +
          `(${settings.concurrency} acquires in flight), then holds them for a ${settings.windowMs / 1000} s window. ` +
          `Every library renews at ttl/3 here (about ${Math.round(renewalsPerSecond).toLocaleString('en-US')} renewals/s in total): ours by default, ` +
          'redis-semaphore with refreshInterval = ttl/3, @sesamecare-oss/redlock through using() with automaticExtensionThreshold = 2/3 ttl; ' +
          "etcd3's Lock keeps its lease alive on its own (etcd3 sends keepalives at ttl/3).",
        '',
        '- heap/lock = (heapUsed after the window - heapUsed before acquiring) / locks held, both after gc(): what the steady state keeps per held lock.',
        '- held = locks acquired (a failed acquire is counted, not retried); lost = held locks the library reported lost during the window (must be 0).',
        '- ELU = performance.eventLoopUtilization() over the window; CPU = process.cpuUsage() (user + system) per second of window.',
        '- server calls/s: Redis commands executed (INFO commandstats, including those inside Lua scripts) or gRPC messages etcd received ' +
          '(/metrics grpc_server_msg_received_total, a keepalive on a stream counts once), over the window. "top" lists the largest per-second counts.',
        '- "vs best peer" columns divide by the best (lowest) peer value: below 1x is better. There is no limit row: raw commands do not renew.',
      ],
      tables,
    },
    rows,
  };
}

async function measure(servers: BenchServers, spec: AdapterSpec, settings: RenewingSettings): Promise<RenewingRow> {
  const payload: RenewingWorkerPayload = {
    adapter: spec.name,
    env: servers.env,
    locks: settings.locks,
    ttl: settings.ttlMs,
    concurrency: settings.concurrency,
  };
  const worker = Worker.start<RenewingWorkerMessage>(WORKER, payload, ['--expose-gc']);
  try {
    const held = await worker.message('held', 180_000);
    const before = await servers.counts(spec.store);
    const started = performance.now();
    worker.send({ type: 'measure', windowMs: settings.windowMs });
    const measured = await worker.message('measured', settings.windowMs + 60_000);
    const after = await servers.counts(spec.store);
    const seconds = (performance.now() - started) / 1000;
    worker.send({ type: 'release' });
    const done = await worker.message('done', 180_000);
    const delta = countDelta(before, after);
    const isRequest = (name: string) => name !== 'LeaseKeepAlive streams';
    const top = [...delta]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 4)
      .map(([name, count]) => `${name} ${num(count / seconds, 0)}`)
      .join(', ');
    return {
      name: spec.name,
      store: spec.store,
      role: spec.role,
      acquired: held.acquired,
      acquireError: held.firstError,
      acquireMs: held.acquireMs,
      heapPerLockBytes: measured.heapPerLockBytes,
      elu: measured.elu,
      cpuMsPerSecond: measured.cpuMsPerSecond,
      callsPerSecond: total(delta, (name) => !isRequest(name)) / seconds,
      topCalls: top,
      lost: measured.lost,
      releaseMs: done.releaseMs,
    };
  } finally {
    await worker.stop(30_000);
  }
}

function table(store: Store, rows: RenewingRow[], failures: Failure[], settings: RenewingSettings): Table {
  const peerHeap = bestOf(rows, 'peer', (row) => row.heapPerLockBytes, 'lower');
  const peerCpu = bestOf(rows, 'peer', (row) => row.cpuMsPerSecond, 'lower');
  const peerCalls = bestOf(rows, 'peer', (row) => row.callsPerSecond, 'lower');
  const headers = [
    'library',
    'heap/lock B',
    'heap vs best peer',
    'ELU',
    'CPU ms/s',
    'CPU vs best peer',
    'server calls/s',
    'calls vs best peer',
    'calls/s per lock',
    'held',
    'lost',
    'acquire all s',
    'release all s',
    'top server calls/s',
  ];
  return {
    title: store === 'redis' ? 'Redis' : 'etcd',
    notes: [
      ...rows
        .filter((row) => row.acquireError)
        .map(
          (row) =>
            `**${row.name}** acquired only ${row.acquired.toLocaleString('en-US')} of ${settings.locks.toLocaleString('en-US')}; first error: ${row.acquireError!.slice(0, 300)}`,
        ),
      ...failureNotes(failures),
    ],
    headers,
    rows: [
      ...rows.map((row) => [
        row.name,
        num(row.heapPerLockBytes, 0),
        times(row.heapPerLockBytes, peerHeap),
        `${num(row.elu * 100, 1)}%`,
        num(row.cpuMsPerSecond, 0),
        times(row.cpuMsPerSecond, peerCpu),
        num(row.callsPerSecond, 0),
        times(row.callsPerSecond, peerCalls),
        num(row.callsPerSecond / settings.locks, 2),
        row.acquired.toLocaleString('en-US'),
        String(row.lost),
        num(row.acquireMs / 1000, 2),
        num(row.releaseMs / 1000, 2),
        row.topCalls,
      ]),
      ...failures.map((failure) => failedRow(failure, headers.length)),
    ],
  };
}
