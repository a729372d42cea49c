import { Failure, failedRow, failureNotes, num, Section, Table, times } from '../lib/report';
import { inRounds, RoundPlan } from '../lib/rounds';
import { BenchServers, countDelta, total } from '../lib/servers';
import { Samples, summarize, Summary } from '../lib/stats';
import type { AdapterSpec, LockAdapter, Role, Store } from '../peers/adapter';

export interface UncontendedSettings {
  /** Measured time per library, split into `rounds` slices. */
  readonly durationMs: number;
  readonly rounds: number;
  readonly warmupMs: number;
}

export interface UncontendedRow {
  readonly name: string;
  readonly store: Store;
  readonly role: Role;
  readonly cycle: Summary;
  readonly acquire: Summary;
  readonly release: Summary;
  readonly opsPerSecond: number;
  /**
   * Median over the rounds of this library's ops/s divided by the limit's (and the best peer's) in the same
   * round: slices minutes apart on this VM can differ by a third, and a ratio within one round cancels that.
   */
  readonly vsLimit: number | undefined;
  readonly vsBestPeer: number | undefined;
  /** ops/s of each slice, one per round, in round order: for a ratio to a named peer in the same rounds. */
  readonly sliceOps: readonly number[];
  readonly serverCallsPerOp: number;
  /** Redis only: PUBLISH commands per cycle (a release should publish only when someone waits). */
  readonly publishesPerOp?: number;
  /**
   * Redis only: server µs per cycle from `INFO commandstats` (script commands when scripts ran, else all
   * commands), and its median per-round ratio to the limit's: the server's own cost of a lock, unaffected by
   * client CPU and the network.
   */
  readonly serverUsPerOp?: number;
  readonly serverUsVsLimit?: number;
  /** etcd only: Raft proposals committed per cycle (the fsynced writes a cycle costs the cluster). */
  readonly raftWritesPerOp: number | undefined;
}

const TTL_MS = 10_000;

/** Scenario 1: one worker, acquire then release the same free key in a sequential loop. */
export async function uncontended(
  servers: BenchServers,
  specs: readonly AdapterSpec[],
  settings: UncontendedSettings,
): Promise<{ section: Section; rows: UncontendedRow[] }> {
  const tables: Table[] = [];
  const all: UncontendedRow[] = [];
  for (const store of ['redis', 'etcd', 'zookeeper'] as Store[]) {
    const storeSpecs = specs.filter((candidate) => candidate.store === store);
    if (storeSpecs.length === 0) continue;
    const entrants = await inRounds(storeSpecs, plan(servers, settings));
    const states = entrants
      .filter((entrant) => entrant.error === undefined && entrant.state)
      .map((entrant) => entrant.state!);
    const rows = withRoundRatios(states);
    const failures: Failure[] = entrants
      .filter((entrant) => entrant.error !== undefined)
      .map((entrant) => ({ name: entrant.spec.name, error: entrant.error }));
    tables.push(table(store, rows, failures));
    all.push(...rows);
  }
  const section: Section = {
    heading: '1. Uncontended acquire + release (one worker, sequential loop)',
    text: [
      `Each library loops acquire -> release on one free key, ttl ${TTL_MS / 1000} s: a ${settings.warmupMs} ms warm-up, then ` +
        `${settings.rounds} slices of ${num(settings.durationMs / settings.rounds / 1000, 2)} s taken in turn with the other libraries (${settings.durationMs / 1000} s each in all). ` +
        'Latency is one full cycle (acquire + release); ops/s = cycles per second over all slices. ' +
        "Ratios: the median over the rounds of ops/s divided by the limit's and the best peer's ops/s in the same round " +
        '(higher is better); the order of the libraries rotates each round.',
    ],
    tables,
  };
  return { section, rows: all };
}

interface State {
  readonly spec: AdapterSpec;
  readonly adapter: LockAdapter;
  readonly cycle: Samples;
  readonly acquire: Samples;
  readonly release: Samples;
  elapsed: number;
  serverCalls: number;
  publishes: number;
  raftWrites: number;
  /** ops/s of each slice, one per round. */
  readonly sliceOps: number[];
  /** Redis: server µs per cycle of each slice, one per round. */
  readonly sliceServerUs: number[];
}

const KEY = 'uncontended';

function plan(servers: BenchServers, settings: UncontendedSettings): RoundPlan<State> {
  return {
    rounds: settings.rounds,
    async open(spec) {
      const adapter = await spec.create(servers.env, { ttl: TTL_MS });
      const state: State = {
        spec,
        adapter,
        cycle: new Samples(),
        acquire: new Samples(),
        release: new Samples(),
        elapsed: 0,
        serverCalls: 0,
        publishes: 0,
        raftWrites: 0,
        sliceOps: [],
        sliceServerUs: [],
      };
      const warmEnd = performance.now() + settings.warmupMs;
      while (performance.now() < warmEnd) await adapter.release(await adapter.acquire(KEY));
      return state;
    },
    async slice(state) {
      const redis = state.spec.store === 'redis';
      const before = await servers.counts(state.spec.store);
      const usecBefore = redis ? await servers.redisServerUsec() : undefined;
      const writesBefore = state.spec.store === 'etcd' ? await servers.etcdRaftWrites() : 0;
      const start = performance.now();
      const end = start + settings.durationMs / settings.rounds;
      let now = start;
      let cycles = 0;
      while (now < end) {
        const handle = await state.adapter.acquire(KEY);
        const acquired = performance.now();
        await state.adapter.release(handle);
        const released = performance.now();
        state.acquire.push(acquired - now);
        state.release.push(released - acquired);
        state.cycle.push(released - now);
        now = released;
        cycles++;
      }
      state.elapsed += now - start;
      state.sliceOps.push((cycles * 1000) / (now - start));
      if (usecBefore) state.sliceServerUs.push(serverUsec(usecBefore, await servers.redisServerUsec()) / cycles);
      const delta = countDelta(before, await servers.counts(state.spec.store));
      state.serverCalls += total(delta, (name) => name === 'LeaseKeepAlive streams');
      if (redis) state.publishes += delta.get('publish') ?? 0;
      if (state.spec.store === 'etcd') state.raftWrites += (await servers.etcdRaftWrites()) - writesBefore;
    },
    close: (state) => state.adapter.close(),
  };
}

/** Rows with their per-round ratios to the limit and to the best peer (by ops/s over all slices). */
function withRoundRatios(states: readonly State[]): UncontendedRow[] {
  const best = (role: Role) =>
    states
      .filter((state) => state.spec.role === role)
      .reduce<State | undefined>((a, b) => (a && opsPerSecond(a) >= opsPerSecond(b) ? a : b), undefined);
  const limit = best('limit');
  const peer = best('peer');
  return states.map((state) =>
    toRow(state, sliceRatio(state, limit), sliceRatio(state, peer), serverUsRatio(state, limit)),
  );
}

/** Script commands when any script ran in the slice, else every command (see BenchServers.redisServerUsec). */
function serverUsec(before: { scripts: number; all: number }, after: { scripts: number; all: number }): number {
  const scripts = after.scripts - before.scripts;
  return scripts > 0 ? scripts : after.all - before.all;
}

function opsPerSecond(state: State): number {
  return (state.cycle.length * 1000) / state.elapsed;
}

/** Median over the rounds of `mine`'s ops/s divided by `other`'s in the same round; undefined without both. */
export function sliceRatio(
  mine: { readonly sliceOps: readonly number[] },
  other: { readonly sliceOps: readonly number[] } | undefined,
): number | undefined {
  if (!other || mine.sliceOps.length === 0 || other.sliceOps.length !== mine.sliceOps.length) return undefined;
  return summarize(mine.sliceOps.map((ops, round) => ops / other.sliceOps[round])).median;
}

/** Median over the rounds of this library's server µs per cycle divided by the limit's in the same round. */
function serverUsRatio(state: State, limit: State | undefined): number | undefined {
  if (!limit || state.sliceServerUs.length === 0 || limit.sliceServerUs.length !== state.sliceServerUs.length)
    return undefined;
  return summarize(state.sliceServerUs.map((us, round) => us / limit.sliceServerUs[round])).median;
}

function toRow(
  state: State,
  vsLimit: number | undefined,
  vsBestPeer: number | undefined,
  serverUsVsLimit: number | undefined,
): UncontendedRow {
  return {
    name: state.spec.name,
    store: state.spec.store,
    role: state.spec.role,
    cycle: summarize(state.cycle.values()),
    acquire: summarize(state.acquire.values()),
    release: summarize(state.release.values()),
    opsPerSecond: opsPerSecond(state),
    vsLimit,
    vsBestPeer,
    sliceOps: state.sliceOps,
    serverCallsPerOp: state.serverCalls / state.cycle.length,
    ...(state.spec.store === 'redis' && { publishesPerOp: state.publishes / state.cycle.length }),
    ...(state.sliceServerUs.length > 0 && { serverUsPerOp: summarize(state.sliceServerUs).median, serverUsVsLimit }),
    raftWritesPerOp: state.spec.store === 'etcd' ? state.raftWrites / state.cycle.length : undefined,
  };
}

const TITLES: Record<Store, string> = { redis: 'Redis', etcd: 'etcd', zookeeper: 'ZooKeeper' };

const CALL_NOTES: Record<Store, string> = {
  redis:
    'server cmds/op counts every command Redis executed (INFO commandstats), including those run inside Lua scripts. ' +
    'server µs/op: the median over the rounds of the server time per cycle (commandstats usec of EVALSHA/EVAL, which includes ' +
    'the commands a script runs, or of every command when no script ran); vs limit: the median per-round ratio (lower is cheaper).',
  etcd:
    'server reqs/op counts gRPC messages etcd received (/metrics grpc_server_msg_received_total); Raft writes/op counts ' +
    'the proposals etcd committed (etcd_server_proposals_committed_total): each put, delete, write txn, lease grant or revoke is one fsynced write.',
  zookeeper:
    'ZooKeeper 3.8 with forceSync=yes (every write fsynced, as in production). server reqs/op counts the requests it received ' +
    '(mntr zk_packets_received, session pings included). The limit creates an ephemeral sequential node and deletes it: no ' +
    'queue position, fencing token or watch. Ours adds a listing of the lock path (pipelined behind the create), which ' +
    'leaves a watch on its children; a node it finds alone is read (and watched) only once they change. Not a write.',
};

function table(store: Store, rows: UncontendedRow[], failures: Failure[]): Table {
  const calls = store === 'redis' ? 'server cmds/op' : 'server reqs/op';
  const redis = store === 'redis';
  const etcd = store === 'etcd';
  const headers = [
    'library',
    'cycle p50 ms',
    'cycle p99 ms',
    'acquire p50 ms',
    'release p50 ms',
    'ops/s',
    'vs limit',
    'vs best peer',
    calls,
    ...(redis ? ['server µs/op', 'server µs vs limit'] : etcd ? ['Raft writes/op'] : []),
  ];
  return {
    title: TITLES[store],
    notes: [CALL_NOTES[store], ...failureNotes(failures)],
    headers,
    rows: [
      ...rows.map((row) => [
        row.name,
        num(row.cycle.median, 3),
        num(row.cycle.p99, 3),
        num(row.acquire.median, 3),
        num(row.release.median, 3),
        num(row.opsPerSecond, 0),
        ratio(row.vsLimit),
        ratio(row.vsBestPeer),
        num(row.serverCallsPerOp, 1),
        ...(redis
          ? [row.serverUsPerOp === undefined ? 'n/a' : num(row.serverUsPerOp, 2), ratio(row.serverUsVsLimit)]
          : etcd
            ? [num(row.raftWritesPerOp ?? NaN, 2)]
            : []),
      ]),
      ...failures.map((failure) => failedRow(failure, headers.length)),
    ],
  };
}

function ratio(value: number | undefined): string {
  return value === undefined ? 'n/a' : times(value, 1);
}
