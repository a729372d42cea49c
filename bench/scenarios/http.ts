import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { freeTestPort } from '../../test/support/free-port';
import { Worker } from '../lib/fork';
import { Failure, failedRow, failureNotes, num, Section, Table } from '../lib/report';
import { BenchServers } from '../lib/servers';
import { summarize } from '../lib/stats';

export interface HttpSettings {
  readonly durationSeconds: number;
  readonly warmupSeconds: number;
  readonly connections: number;
  /**
   * Measured pairs of plain and locked runs per backend; which of the two goes first alternates. The memory
   * backend's pairs measure the goal, so they get more: single pairs on this VM range from 0.6x to 1.0x.
   */
  readonly rounds: { readonly memory: number; readonly redis: number };
  /** Pairs of plain and pass-through-interceptor runs, measured after (and apart from) the locked ones. */
  readonly floorRounds: number;
}

export interface HttpRow {
  readonly backend: 'memory' | 'redis';
  readonly route: Route;
  readonly requestsPerSecond: number;
  /**
   * The median over pairs of this route's req/s divided by the plain route's in the same pair. The shared VM's
   * speed drifts by a third between minutes; within one pair both routes see the same machine.
   */
  readonly vsPlain: number;
  /** The lowest and highest of those ratios. */
  readonly vsPlainRange: readonly [number, number];
  readonly p50: number;
  readonly p99: number;
  readonly failures: number;
  /**
   * The app process's CPU time (user + system) per request, median over the runs, in µs; undefined where
   * /proc is missing. Steadier than req/s: it does not depend on how the load generator was scheduled.
   */
  readonly cpuPerRequest: number | undefined;
}

/** One route's autocannon run, with the app's CPU time spent during it. */
interface RouteRun {
  readonly result: autocannon.Result;
  readonly cpuMs: number | undefined;
}

const APP = join(__dirname, '..', 'http-app.ts');
/** plain: no interceptor; intercepted: a pass-through Nest interceptor (the floor for any interceptor); locked: @WithLock. */
const ROUTES = ['plain', 'intercepted', 'locked'] as const;
type Route = (typeof ROUTES)[number];
const ROUTE_LABELS: Record<Route, string> = {
  plain: 'GET /plain/:id',
  intercepted: 'GET /intercepted/:id  @UseInterceptors(PassThrough)',
  locked: "GET /locked/:id  @WithLock('bench:<<id>>')",
};
type AppMessage = { readonly type: 'ready'; readonly port: number };

/** Scenario 5: autocannon against the bench app, the same handler with and without @WithLock. */
export async function http(servers: BenchServers, settings: HttpSettings): Promise<{ section: Section; rows: HttpRow[] }> {
  const rows: HttpRow[] = [];
  const failures: Failure[] = [];
  for (const backend of ['memory', 'redis'] as const) {
    try {
      rows.push(...(await measureBackend(servers, backend, settings)));
    } catch (error) {
      failures.push({ name: backend, error });
    }
  }
  const headers = ['backend', 'route', 'req/s', 'vs plain', 'app CPU µs/request', 'latency p50 ms', 'latency p99 ms', 'non-2xx + errors'];
  const table: Table = {
    title: 'requests/s and latency, with and without @WithLock',
    notes: [
      'autocannon reports latency in whole milliseconds.',
      '"vs plain" is the median, over the pairs, of the ratio to the plain run of the same pair, with the lowest and highest in brackets (req/s is the mean; the plain row is from the locked pairs).',
      '"app CPU µs/request" is the app process\'s user + system CPU time during a run divided by its requests, median over the runs (from /proc, 10 ms ticks).',
      ...failureNotes(failures),
    ],
    headers,
    textColumns: 2,
    rows: [
      ...rows.map((row) => {
        const plain = rows.find((other) => other.backend === row.backend && other.route === 'plain');
        return [
          row.backend,
          ROUTE_LABELS[row.route],
          num(row.requestsPerSecond, 0),
          row.route !== 'plain' ? `${num(row.vsPlain, 2)}x (${num(row.vsPlainRange[0], 2)}-${num(row.vsPlainRange[1], 2)})` : '',
          row.cpuPerRequest === undefined ? 'n/a' : num(row.cpuPerRequest, 1),
          num(row.p50, 2),
          num(row.p99, 2),
          String(row.failures),
        ];
      }),
      ...failures.map((failure) => failedRow(failure, headers.length)),
    ],
  };
  return {
    section: {
      heading: '5. HTTP: the same route with and without @WithLock',
      text: [
        'bench/http-app.ts: a Nest 11 app (express) with `GET /plain/:id`, `GET /intercepted/:id` (a pass-through interceptor that only returns `next.handle()`) and `GET /locked/:id` decorated `@WithLock(\'bench:<<id>>\')`, all returning `{ id }`. ' +
          '@WithLock wraps the handler instead of running as a Nest interceptor; the pass-through row shows the floor an interceptor-based lock would pay. ' +
          'The lock scope (AsyncLocalStorage, for reentrancy and LockService.current()) enables Node 20\'s promise hooks for the whole process once the first @WithLock request runs, so the plain row pays them too. ' +
          'The sample app in sample/ had no unlocked twin route, so the bench carries its own. Every request uses a random id, so locks never contend.',
        'Express tries routes in declaration order, and one failed route match costs about 2-3 % of a request this small (measured with two identical plain routes), so it would count against whichever route is declared second. ' +
          'Half the pairs therefore run in an app that declares the plain route first, and half in a second app process that declares the locked route first; the pass-through route comes third in both. ' +
          `autocannon: ${settings.connections} connections, ${settings.warmupSeconds} s warm-up per route in each app, then ${settings.rounds.memory} (memory) or ${settings.rounds.redis} (Redis) pairs of ${settings.durationSeconds} s runs of the plain and the locked route ` +
          '(which one goes first alternates), then apart from them ' +
          `${settings.floorRounds} pairs of the plain and the pass-through route (its run leaves garbage that the next run pays to collect). ` +
          'req/s is the mean of those runs, latency percentiles are from the last run. ' +
          'App and autocannon run as separate processes on the same 2 cores (and redis-server for the Redis rows).',
      ],
      tables: [table],
    },
    rows,
  };
}

/** See bench/http-app.ts: half the pairs with each route listed first. */
const ROUTE_ORDERS = ['plain-first', 'locked-first'] as const;

async function measureBackend(servers: BenchServers, backend: 'memory' | 'redis', settings: HttpSettings): Promise<HttpRow[]> {
  const locked: Paired = { plain: [], other: [] };
  const intercepted: Paired = { plain: [], other: [] };
  for (const [index, order] of ROUTE_ORDERS.entries()) {
    // The first app gets the odd pair out.
    const share = (total: number) => (index === 0 ? Math.ceil(total / 2) : Math.floor(total / 2));
    const runs = await measureApp(servers, backend, order, share(settings.rounds[backend]), share(settings.floorRounds), settings);
    for (const [into, from] of [[locked, runs.locked], [intercepted, runs.intercepted]] as const) {
      into.plain.push(...from.plain);
      into.other.push(...from.other);
    }
  }
  const row = (route: Route, runs: RouteRun[], plainRuns: RouteRun[] | undefined): HttpRow => {
    const results = runs.map((run) => run.result);
    const plain = plainRuns?.map((run) => run.result);
    const last = results[results.length - 1];
    const ratios = plain ? results.map((result, round) => result.requests.average / plain[round].requests.average) : [1];
    const cpuPerRequest = runs.flatMap((run) => (run.cpuMs === undefined || run.result.requests.total === 0 ? [] : [(run.cpuMs * 1000) / run.result.requests.total]));
    return {
      backend,
      route,
      requestsPerSecond: results.reduce((sum, result) => sum + result.requests.average, 0) / results.length,
      vsPlain: summarize(ratios).median,
      vsPlainRange: [Math.min(...ratios), Math.max(...ratios)],
      p50: last.latency.p50,
      p99: last.latency.p99,
      failures: results.reduce((sum, result) => sum + result.non2xx + result.errors + result.timeouts, 0),
      cpuPerRequest: cpuPerRequest.length > 0 ? summarize(cpuPerRequest).median : undefined,
    };
  };
  return [row('plain', locked.plain, undefined), row('intercepted', intercepted.other, intercepted.plain), row('locked', locked.other, locked.plain)];
}

/** Runs of the plain route and another one, pair by pair. */
interface Paired {
  readonly plain: RouteRun[];
  readonly other: RouteRun[];
}

/** One app process (routes in `order`): warm-up, then the locked pairs, then the pass-through pairs. */
async function measureApp(
  servers: BenchServers,
  backend: 'memory' | 'redis',
  order: (typeof ROUTE_ORDERS)[number],
  lockedRounds: number,
  floorRounds: number,
  settings: HttpSettings,
): Promise<{ locked: Paired; intercepted: Paired }> {
  const port = await freeTestPort();
  const app = Worker.start<AppMessage>(APP, {}, [], { LOCK_BACKEND: backend, REDIS_URL: servers.redis.url, PORT: String(port), ROUTE_ORDER: order });
  try {
    await app.next('ready', 60_000);
    const base = `http://127.0.0.1:${port}`;
    const cpu = processCpu(app.pid);
    for (const route of ROUTES) await load(base, route, settings.warmupSeconds, settings.connections, cpu);
    const locked = await pairedWithPlain(base, 'locked', lockedRounds, settings, cpu);
    // Apart from the pairs above: the interceptor's run leaves much garbage behind, which the run after it pays
    // to collect; run among them, it would burden whichever route follows it most often.
    const intercepted = await pairedWithPlain(base, 'intercepted', floorRounds, settings, cpu);
    return { locked, intercepted };
  } finally {
    app.send({ type: 'stop' });
    await app.stop(10_000);
  }
}

/** `rounds` pairs of runs, the plain route and `route`; which one goes first alternates from pair to pair. */
async function pairedWithPlain(
  base: string,
  route: Route,
  rounds: number,
  settings: HttpSettings,
  cpu: () => number | undefined,
): Promise<Paired> {
  const plain: RouteRun[] = [];
  const other: RouteRun[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const which of round % 2 === 0 ? ['plain', route] : [route, 'plain']) {
      const run = await load(base, which as Route, settings.durationSeconds, settings.connections, cpu);
      (which === 'plain' ? plain : other).push(run);
    }
  }
  return { plain, other };
}

async function load(base: string, route: Route, seconds: number, connections: number, cpu: () => number | undefined): Promise<RouteRun> {
  const before = cpu();
  const result = await autocannon({
    url: base,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'GET',
        setupRequest: (request) => ({ ...request, path: `/${route}/${Math.floor(Math.random() * 1e9)}` }),
      },
    ],
  });
  const after = cpu();
  return { result, cpuMs: before === undefined || after === undefined ? undefined : after - before };
}

/** Reads a process's CPU time (user + system, ms) from /proc; undefined off Linux. */
function processCpu(pid: number | undefined): () => number | undefined {
  let msPerTick: number;
  try {
    msPerTick = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
  } catch {
    msPerTick = 10;
  }
  return () => {
    if (pid === undefined) return undefined;
    try {
      // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return (Number(fields[11]) + Number(fields[12])) * msPerTick;
    } catch {
      return undefined;
    }
  };
}
