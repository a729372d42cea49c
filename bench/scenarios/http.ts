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
   * CPU per request is measured in a second run of each route, paced at this many requests/s (below every
   * route's capacity) for `cpuSeconds`. A saturated run overstates a slower route: with the app the bottleneck,
   * the load generator idles between replies, and each reply's socket write then pays to wake it (measured:
   * about 30 µs per request more in writev alone for the locked route than for the pass-through one, against
   * 1 µs when both run at the same rate).
   */
  readonly cpuRate: number;
  readonly cpuSeconds: number;
  /**
   * Measured rounds per backend. Each round runs the three routes once, in an order that rotates from round to
   * round, so each route follows each other equally often (a run leaves garbage that the next one collects).
   */
  readonly rounds: { readonly memory: number; readonly redis: number };
}

export interface HttpRow {
  readonly backend: 'memory' | 'redis';
  readonly route: Route;
  readonly requestsPerSecond: number;
  /**
   * The median over rounds of this route's req/s divided by the plain route's in the same round. The shared VM's
   * speed drifts by a third between minutes; within one round the routes see much the same machine.
   */
  readonly vsPlain: number;
  /** The lowest and highest of those ratios. */
  readonly vsPlainRange: readonly [number, number];
  readonly p50: number;
  readonly p99: number;
  readonly failures: number;
  /**
   * The app process's CPU time (user + system) per request of the paced runs, median over the rounds, in µs.
   * Steadier than req/s: it does not depend on how the load generator was scheduled.
   */
  readonly cpuPerRequest: number | undefined;
  /**
   * App CPU µs per request over the route this one is compared with in the same round (the pass-through route
   * for the locked one, the plain route for the pass-through one): median over rounds, with the range.
   */
  readonly cpuOver:
    { readonly baseline: Route; readonly median: number; readonly range: readonly [number, number] } | undefined;
  /**
   * Bytes the app allocated on its JS heap per request in the paced runs, median over rounds, and the median
   * of the per-round differences with the same baseline as cpuOver. Allocation does not drift with the VM's
   * speed, so it tracks changes that CPU time is too noisy to show; each byte also costs collection later.
   */
  readonly heapPerRequest: number | undefined;
  readonly heapOver: number | undefined;
}

/** One route's autocannon run; a paced one also has the app's CPU time and heap allocation during it. */
interface RouteRun {
  readonly result: autocannon.Result;
  readonly usage?: AppUsage;
}

/** What the app process used between the start and the end of a run, as it measured itself. */
interface AppUsage {
  readonly cpuMicros: number;
  readonly heapBytes: number;
}

/** A route's saturated run (req/s, latency) and its paced run (CPU per request), back to back. */
interface RoutePair {
  readonly saturated: RouteRun;
  readonly paced: RouteRun;
}

const APP = join(__dirname, '..', 'http-app.ts');
/**
 * plain: no interceptor; intercepted: a pass-through Nest interceptor (the floor for any interceptor); locked:
 * @WithLock; raw-redis (Redis only): an interceptor that sends just `SET NX PX` and `DEL` (the floor for a Redis lock);
 * plain-unlocked (memory only): the plain route of a second app process that never serves a locked request, so the
 * lock scope's AsyncLocalStorage is never enabled there (what that costs every route of an app on this Node version).
 */
const ROUTES = ['plain', 'intercepted', 'locked', 'raw-redis', 'plain-unlocked'] as const;
type Route = (typeof ROUTES)[number];
const ROUTE_LABELS: Record<Route, string> = {
  plain: 'GET /plain/:id',
  intercepted: 'GET /intercepted/:id  @UseInterceptors(PassThrough)',
  locked: "GET /locked/:id  @WithLock('bench:<<id>>')",
  'raw-redis': 'GET /raw-redis/:id  raw SET NX PX + DEL (limit)',
  'plain-unlocked': 'GET /plain/:id  in an app where no lock ever ran',
};
/** What each route's CPU is compared with: the locked route pays Nest's interceptor machinery as the pass-through one does. */
const COMPARED_WITH: Partial<Record<Route, Route>> = {
  plain: 'plain-unlocked',
  intercepted: 'plain',
  locked: 'intercepted',
  'raw-redis': 'intercepted',
};

function routesOf(backend: 'memory' | 'redis'): readonly Route[] {
  return ROUTES.filter((route) => route !== (backend === 'redis' ? 'plain-unlocked' : 'raw-redis'));
}

/** The route whose CPU this one's is compared with, if the backend runs it. */
function baselineOf(backend: 'memory' | 'redis', route: Route): Route | undefined {
  const baseline = COMPARED_WITH[route];
  return baseline && routesOf(backend).includes(baseline) ? baseline : undefined;
}
type AppMessage =
  | { readonly type: 'ready'; readonly port: number }
  | { readonly type: 'window-started' }
  | ({ readonly type: 'window' } & AppUsage);

/** Scenario 5: autocannon against the bench app: the same handler plain, behind a pass-through interceptor, and with @WithLock. */
export async function http(
  servers: BenchServers,
  settings: HttpSettings,
): Promise<{ section: Section; rows: HttpRow[] }> {
  const rows: HttpRow[] = [];
  const failures: Failure[] = [];
  for (const backend of ['memory', 'redis'] as const) {
    try {
      rows.push(...(await measureBackend(servers, backend, settings)));
    } catch (error) {
      failures.push({ name: backend, error });
    }
  }
  const headers = [
    'backend',
    'route',
    'app CPU µs/request',
    'CPU µs over',
    'heap KB/request (over)',
    'req/s',
    'vs plain',
    'latency p50 ms',
    'latency p99 ms',
    'non-2xx + errors',
  ];
  const table: Table = {
    title:
      'app CPU per request and requests/s: plain, pass-through interceptor, @WithLock (and the raw commands on Redis)',
    notes: [
      `"app CPU µs/request" is the app process's user + system CPU time during a paced run (${settings.cpuRate} requests/s, ${settings.cpuSeconds} s) divided by its requests, median over the rounds (process.cpuUsage() in the app, read as the run starts and ends). req/s, "vs plain" and latency come from the saturated runs.`,
      '"CPU µs over" is the median, over the rounds, of this route\'s app CPU per request minus that of the route named in brackets in the same round, then the lowest and highest of those differences.',
      '"heap KB/request" is what the app allocated on its JS heap during the paced run (from the used heap and what each collection in between freed, v8.GCProfiler) divided by its requests, median over the rounds; in brackets, the median over the rounds of the difference with the route named under "CPU µs over". It does not drift with the machine\'s speed as CPU time does.',
      '"vs plain" is the median, over the rounds, of the ratio of req/s to the plain run of the same round, with the lowest and highest in brackets (req/s is the mean).',
      'autocannon reports latency in whole milliseconds.',
      ...failureNotes(failures),
    ],
    headers,
    textColumns: 2,
    rows: [
      ...rows.map((row) => [
        row.backend,
        ROUTE_LABELS[row.route],
        row.cpuPerRequest === undefined ? 'n/a' : num(row.cpuPerRequest, 1),
        row.cpuOver
          ? `${num(row.cpuOver.median, 1)} (${row.cpuOver.baseline}; ${num(row.cpuOver.range[0], 1)} to ${num(row.cpuOver.range[1], 1)})`
          : '',
        row.heapPerRequest === undefined
          ? 'n/a'
          : `${num(row.heapPerRequest / 1024, 1)}${row.heapOver === undefined ? '' : ` (${row.heapOver >= 0 ? '+' : ''}${num(row.heapOver / 1024, 1)})`}`,
        num(row.requestsPerSecond, 0),
        row.route !== 'plain'
          ? `${num(row.vsPlain, 2)}x (${num(row.vsPlainRange[0], 2)}-${num(row.vsPlainRange[1], 2)})`
          : '',
        num(row.p50, 2),
        num(row.p99, 2),
        String(row.failures),
      ]),
      ...failures.map((failure) => failedRow(failure, headers.length)),
    ],
  };
  return {
    section: {
      heading: '5. HTTP: the same route plain, behind a pass-through interceptor, and with @WithLock',
      text: [
        "bench/http-app.ts: a Nest 11 app (express) with `GET /plain/:id`, `GET /intercepted/:id` (a pass-through interceptor that only returns `next.handle()`) and `GET /locked/:id` decorated `@WithLock('bench:<<id>>')`, all returning `{ id }`. " +
          "@WithLock is `@UseInterceptors(LockInterceptor)` plus metadata, so the lock's own cost is the locked route over the pass-through one, which pays the same Nest interceptor machinery (issue 16's goal: at most 25 µs of app CPU per request on memory, 60 µs on Redis). " +
          "On Redis a fourth route, `GET /raw-redis/:id`, sits behind an interceptor that sends only a raw lock's two commands (`SET key 1 NX PX` before the handler, `DEL key` after) on the same ioredis client: the least any Redis lock costs the app, so the locked route over it is what the library adds. " +
          `The lock scope (AsyncLocalStorage, for reentrancy and LockService.current()) enables Node's promise hooks for the whole process once the first @WithLock request runs (on Node 20 and 22; Node 24 propagates it without hooks), so the other routes pay them too: on memory, a second app process that never serves a locked request runs its plain route in the same rounds ("in an app where no lock ever ran"), and the plain route's "CPU µs over" is what those hooks cost every request of the app. This run: Node ${process.versions.node}. ` +
          'Every request uses a random id, so locks never contend.',
        'Express tries routes in declaration order, and one failed route match costs about 2-3 % of a request this small (measured with two identical plain routes), so it would count against whichever route is declared later. ' +
          'Half the rounds therefore run in an app that declares the plain route first, and half in a second app process that declares the locked route first; the pass-through route comes third in both. ' +
          `autocannon: ${settings.connections} connections, ${settings.warmupSeconds} s warm-up per route in each app, then ${settings.rounds.memory} (memory) or ${settings.rounds.redis} (Redis) rounds, each a ${settings.durationSeconds} s run of every route ` +
          '(the order rotates from round to round, so each route follows each other equally often: a run leaves garbage that the next one pays to collect). ' +
          `Each of those runs is followed by a run of the same route paced at ${settings.cpuRate} requests/s for ${settings.cpuSeconds} s, which gives the CPU figures: saturated, the app is the bottleneck, autocannon idles between replies, and each reply's socket write pays to wake it, so a slower route's CPU per request grows with work that is not its own (about 30 µs more in writev alone for the locked route than for the pass-through one when saturated, 1 µs when both run paced). ` +
          'req/s is the mean of the saturated runs, latency percentiles are from the last one. ' +
          'App and autocannon run as separate processes on the same 2 cores (and redis-server for the Redis rows).',
      ],
      tables: [table],
    },
    rows,
  };
}

/** See bench/http-app.ts: half the rounds with each route listed first. */
const ROUTE_ORDERS = ['plain-first', 'locked-first'] as const;

async function measureBackend(
  servers: BenchServers,
  backend: 'memory' | 'redis',
  settings: HttpSettings,
): Promise<HttpRow[]> {
  const rounds: Round[] = [];
  for (const [index, order] of ROUTE_ORDERS.entries()) {
    // The first app gets the odd round out.
    const share = index === 0 ? Math.ceil(settings.rounds[backend] / 2) : Math.floor(settings.rounds[backend] / 2);
    rounds.push(...(await measureApp(servers, backend, order, share, settings)));
  }
  return routesOf(backend).map((route): HttpRow => {
    const results = rounds.map((round) => round[route]!.saturated.result);
    const last = results[results.length - 1];
    const ratios = rounds.map(
      (round) => round[route]!.saturated.result.requests.average / round.plain!.saturated.result.requests.average,
    );
    const cpu = rounds.flatMap((round) => definedOrNone(cpuPerRequest(round[route]!)));
    const baseline = baselineOf(backend, route);
    const over = differences(rounds, route, baseline, cpuPerRequest);
    const heap = rounds.flatMap((round) => definedOrNone(heapPerRequest(round[route]!)));
    const heapOver = differences(rounds, route, baseline, heapPerRequest);
    return {
      backend,
      route,
      requestsPerSecond: results.reduce((sum, result) => sum + result.requests.average, 0) / results.length,
      vsPlain: summarize(ratios).median,
      vsPlainRange: [Math.min(...ratios), Math.max(...ratios)],
      p50: last.latency.p50,
      p99: last.latency.p99,
      failures: results.reduce((sum, result) => sum + result.non2xx + result.errors + result.timeouts, 0),
      cpuPerRequest: cpu.length > 0 ? summarize(cpu).median : undefined,
      cpuOver:
        baseline && over.length > 0
          ? { baseline, median: summarize(over).median, range: [Math.min(...over), Math.max(...over)] }
          : undefined,
      heapPerRequest: heap.length > 0 ? summarize(heap).median : undefined,
      heapOver: heapOver.length > 0 ? summarize(heapOver).median : undefined,
    };
  });
}

/** Per round, this route's figure minus the baseline route's, where both have one. */
function differences(
  rounds: readonly Round[],
  route: Route,
  baseline: Route | undefined,
  figure: (pair: RoutePair) => number | undefined,
): number[] {
  if (!baseline) return [];
  return rounds.flatMap((round) => {
    const [mine, theirs] = [figure(round[route]!), figure(round[baseline]!)];
    return mine === undefined || theirs === undefined ? [] : [mine - theirs];
  });
}

function definedOrNone(value: number | undefined): number[] {
  return value === undefined ? [] : [value];
}

/** Heap bytes per request of the paced run. */
function heapPerRequest({ paced }: RoutePair): number | undefined {
  return paced.usage === undefined || paced.result.requests.total === 0
    ? undefined
    : paced.usage.heapBytes / paced.result.requests.total;
}

/** One pair of runs of each route of the backend, in the same stretch of minutes. */
type Round = Partial<Record<Route, RoutePair>>;

/** From the paced run: at the same request rate, every route pays the same socket and wake-up costs. */
function cpuPerRequest({ paced }: RoutePair): number | undefined {
  return paced.usage === undefined || paced.result.requests.total === 0
    ? undefined
    : paced.usage.cpuMicros / paced.result.requests.total;
}

/** A started bench app: its base URL and a window on what it uses. */
interface RunningApp {
  readonly base: string;
  readonly usage: UsageWindow;
  stop(): Promise<void>;
}

/**
 * Asks the app to measure its CPU time and heap allocation from start() until stop() answers; start() resolves
 * once the app has begun, so no request of the run comes before.
 */
interface UsageWindow {
  start(): Promise<void>;
  stop(): Promise<AppUsage>;
}

async function startApp(
  servers: BenchServers,
  backend: 'memory' | 'redis',
  order: (typeof ROUTE_ORDERS)[number],
): Promise<RunningApp> {
  const port = await freeTestPort();
  const app = Worker.start<AppMessage>(APP, {}, [], {
    LOCK_BACKEND: backend,
    REDIS_URL: servers.redis.url,
    PORT: String(port),
    ROUTE_ORDER: order,
  });
  const stop = async () => {
    app.send({ type: 'stop' });
    await app.stop(10_000);
  };
  try {
    await app.message('ready', 60_000);
  } catch (error) {
    await stop();
    throw error;
  }
  const usage: UsageWindow = {
    start: async () => {
      app.send({ type: 'window-start' });
      await app.message('window-started', 10_000);
    },
    stop: async () => {
      app.send({ type: 'window-stop' });
      const { cpuMicros, heapBytes } = await app.message('window', 10_000);
      return { cpuMicros, heapBytes };
    },
  };
  return { base: `http://127.0.0.1:${port}`, usage, stop };
}

/**
 * One app process (routes in `order`): warm-up, then `rounds` rounds of its routes in rotating order. The
 * plain-unlocked route runs in a second app of the same order, which serves nothing else.
 */
async function measureApp(
  servers: BenchServers,
  backend: 'memory' | 'redis',
  order: (typeof ROUTE_ORDERS)[number],
  rounds: number,
  settings: HttpSettings,
): Promise<Round[]> {
  const routes = routesOf(backend);
  const apps: RunningApp[] = [];
  try {
    const main = await startApp(servers, backend, order);
    apps.push(main);
    const unlocked = routes.includes('plain-unlocked') ? await startApp(servers, backend, order) : undefined;
    if (unlocked) apps.push(unlocked);
    const run = (route: Route, seconds: number, rate?: number) => {
      const [app, path] = route === 'plain-unlocked' ? [unlocked!, 'plain' as const] : [main, route];
      return load(app, path, seconds, settings.connections, rate);
    };
    for (const route of routes) await run(route, settings.warmupSeconds);
    const measured: Round[] = [];
    for (let round = 0; round < rounds; round++) {
      const runs: Round = {};
      for (let step = 0; step < routes.length; step++) {
        const route = routes[(round + step) % routes.length];
        const saturated = await run(route, settings.durationSeconds);
        const paced = await run(route, settings.cpuSeconds, settings.cpuRate);
        const expected = settings.cpuRate * settings.cpuSeconds;
        if (paced.result.requests.total < 0.9 * expected) {
          throw new Error(
            `${route} served ${paced.result.requests.total} of the ${expected} requests of a paced run: lower http.cpuRate`,
          );
        }
        runs[route] = { saturated, paced };
      }
      measured.push(runs);
    }
    return measured;
  } finally {
    await Promise.all(apps.map((app) => app.stop()));
  }
}

/** One autocannon run; a paced one (overallRate set) also measures the app's CPU time and heap allocation. */
async function load(
  app: RunningApp,
  route: Exclude<Route, 'plain-unlocked'>,
  seconds: number,
  connections: number,
  /** Requests/s over all connections; unset: as fast as the app answers. */
  overallRate?: number,
): Promise<RouteRun> {
  const paced = overallRate !== undefined;
  if (paced) await app.usage.start();
  const result = await autocannon({
    url: app.base,
    connections,
    duration: seconds,
    overallRate,
    requests: [
      {
        method: 'GET',
        setupRequest: (request) => ({ ...request, path: `/${route}/${Math.floor(Math.random() * 1e9)}` }),
      },
    ],
  });
  return { result, usage: paced ? await app.usage.stop() : undefined };
}
