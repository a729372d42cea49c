import { bestOf } from '../lib/compare';
import { Failure, failedRow, failureNotes, num, Section, Table, times } from '../lib/report';
import { inRounds, RoundPlan } from '../lib/rounds';
import { BenchServers } from '../lib/servers';
import { Samples, summarize, Summary } from '../lib/stats';
import type { AdapterSpec, LockAdapter, Role, Store } from '../peers/adapter';

export interface ManyKeysSettings {
  /** Measured time per library, split into `rounds` slices. */
  readonly durationMs: number;
  readonly rounds: number;
  readonly keys: number;
  readonly workers: number;
}

export interface ManyKeysRow {
  readonly name: string;
  readonly store: Store;
  readonly role: Role;
  readonly opsPerSecond: number;
  readonly cycle: Summary;
}

const TTL_MS = 10_000;

/** Scenario 3: many workers on many keys; collisions are rare, so this is mostly throughput under load. */
export async function manyKeys(
  servers: BenchServers,
  specs: readonly AdapterSpec[],
  settings: ManyKeysSettings,
): Promise<{ section: Section; rows: ManyKeysRow[] }> {
  const tables: Table[] = [];
  const all: ManyKeysRow[] = [];
  for (const store of ['redis', 'etcd'] as Store[]) {
    const storeSpecs = specs.filter((spec) => spec.store === store);
    if (storeSpecs.length === 0) continue;
    const entrants = await inRounds(storeSpecs, plan(servers, settings));
    const rows = entrants
      .filter((entrant) => entrant.error === undefined && entrant.state)
      .map((entrant) => toRow(entrant.state!));
    const failures: Failure[] = entrants
      .filter((entrant) => entrant.error !== undefined)
      .map((entrant) => ({ name: entrant.spec.name, error: entrant.error }));
    tables.push(table(store, rows, failures));
    all.push(...rows);
  }
  return {
    section: {
      heading: `3. ${settings.keys.toLocaleString('en-US')} keys, ${settings.workers} workers: throughput`,
      text: [
        `${settings.workers} concurrent workers in one process (one client per library) each loop: pick one of ${settings.keys} keys at random, ` +
          `acquire, release. ${settings.rounds} slices of ${num(settings.durationMs / settings.rounds / 1000, 2)} s per library, taken in turn with the others; ttl ${TTL_MS / 1000} s. ` +
          "A worker that hits a key another worker holds waits with its library's own policy (section 2), which is what shows in p99.",
      ],
      tables,
    },
    rows: all,
  };
}

interface State {
  readonly spec: AdapterSpec;
  readonly adapter: LockAdapter;
  readonly cycles: Samples;
  elapsed: number;
}

function plan(servers: BenchServers, settings: ManyKeysSettings): RoundPlan<State> {
  return {
    rounds: settings.rounds,
    async open(spec) {
      const adapter = await spec.create(servers.env, { ttl: TTL_MS });
      await adapter.release(await adapter.acquire('many:warm'));
      return { spec, adapter, cycles: new Samples(), elapsed: 0 };
    },
    async slice(state) {
      const start = performance.now();
      const end = start + settings.durationMs / settings.rounds;
      await Promise.all(
        Array.from({ length: settings.workers }, () => work(state.adapter, settings.keys, end, state.cycles)),
      );
      state.elapsed += performance.now() - start;
    },
    close: (state) => state.adapter.close(),
  };
}

function toRow(state: State): ManyKeysRow {
  return {
    name: state.spec.name,
    store: state.spec.store,
    role: state.spec.role,
    opsPerSecond: (state.cycles.length * 1000) / state.elapsed,
    cycle: summarize(state.cycles.values()),
  };
}

async function work(adapter: LockAdapter, keys: number, end: number, cycles: Samples): Promise<void> {
  let now = performance.now();
  while (now < end) {
    const key = `many:${Math.floor(Math.random() * keys)}`;
    await adapter.release(await adapter.acquire(key));
    const done = performance.now();
    cycles.push(done - now);
    now = done;
  }
}

function table(store: Store, rows: ManyKeysRow[], failures: Failure[]): Table {
  const limit = bestOf(rows, 'limit', (row) => row.opsPerSecond, 'higher');
  const peer = bestOf(rows, 'peer', (row) => row.opsPerSecond, 'higher');
  const headers = ['library', 'ops/s', 'vs limit', 'vs best peer', 'cycle p50 ms', 'cycle p99 ms', 'cycle max ms'];
  return {
    title: store === 'redis' ? 'Redis' : 'etcd',
    notes: failureNotes(failures),
    headers,
    rows: [
      ...rows.map((row) => [
        row.name,
        num(row.opsPerSecond, 0),
        times(row.opsPerSecond, limit),
        times(row.opsPerSecond, peer),
        num(row.cycle.median, 2),
        num(row.cycle.p99, 2),
        num(row.cycle.max, 0),
      ]),
      ...failures.map((failure) => failedRow(failure, headers.length)),
    ],
  };
}
