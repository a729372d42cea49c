import { join } from 'node:path';
import autocannon from 'autocannon';
import { freeTestPort } from '../../test/support/free-port';
import { Worker } from '../lib/fork';
import { Failure, failedRow, failureNotes, num, Section, Table, times } from '../lib/report';
import { BenchServers } from '../lib/servers';

export interface HttpSettings {
  readonly durationSeconds: number;
  readonly warmupSeconds: number;
  readonly connections: number;
  /** Measured runs per route, alternating plain and locked so drift hits both alike. */
  readonly rounds: number;
}

export interface HttpRow {
  readonly backend: 'memory' | 'redis';
  readonly route: 'plain' | 'locked';
  readonly requestsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly failures: number;
}

const APP = join(__dirname, '..', 'http-app.ts');
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
  const headers = ['backend', 'route', 'req/s', 'locked/plain req/s', 'latency p50 ms', 'latency p99 ms', 'non-2xx + errors'];
  const table: Table = {
    title: 'requests/s and latency, with and without @WithLock',
    notes: ['autocannon reports latency in whole milliseconds.', ...failureNotes(failures)],
    headers,
    textColumns: 2,
    rows: [
      ...rows.map((row) => {
        const plain = rows.find((other) => other.backend === row.backend && other.route === 'plain');
        return [
          row.backend,
          row.route === 'plain' ? 'GET /plain/:id' : "GET /locked/:id  @WithLock('bench:<<id>>')",
          num(row.requestsPerSecond, 0),
          row.route === 'locked' && plain ? times(row.requestsPerSecond, plain.requestsPerSecond) : '',
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
        'bench/http-app.ts: a Nest 11 app (express) with `GET /plain/:id` and `GET /locked/:id` decorated `@WithLock(\'bench:<<id>>\')`, both returning `{ id }`. ' +
          'The sample app in sample/ had no unlocked twin route, so the bench carries its own. Every request uses a random id, so locks never contend.',
        `autocannon: ${settings.connections} connections, ${settings.warmupSeconds} s warm-up per route, then ${settings.rounds} x ${settings.durationSeconds} s per route ` +
          'alternating plain/locked; req/s is the mean of those runs, latency percentiles are from the last run. ' +
          'App and autocannon run as separate processes on the same 2 cores (and redis-server for the Redis rows).',
      ],
      tables: [table],
    },
    rows,
  };
}

async function measureBackend(servers: BenchServers, backend: 'memory' | 'redis', settings: HttpSettings): Promise<HttpRow[]> {
  const port = await freeTestPort();
  const app = Worker.start<AppMessage>(APP, {}, [], { LOCK_BACKEND: backend, REDIS_URL: servers.redis.url, PORT: String(port) });
  try {
    await app.next('ready', 60_000);
    const base = `http://127.0.0.1:${port}`;
    for (const route of ['plain', 'locked'] as const) await load(base, route, settings.warmupSeconds, settings.connections);
    const runs: Record<'plain' | 'locked', autocannon.Result[]> = { plain: [], locked: [] };
    for (let round = 0; round < settings.rounds; round++) {
      for (const route of ['plain', 'locked'] as const) runs[route].push(await load(base, route, settings.durationSeconds, settings.connections));
    }
    return (['plain', 'locked'] as const).map((route) => {
      const results = runs[route];
      const last = results[results.length - 1];
      return {
        backend,
        route,
        requestsPerSecond: results.reduce((sum, result) => sum + result.requests.average, 0) / results.length,
        p50: last.latency.p50,
        p99: last.latency.p99,
        failures: results.reduce((sum, result) => sum + result.non2xx + result.errors + result.timeouts, 0),
      };
    });
  } finally {
    app.send({ type: 'stop' });
    await app.stop(10_000);
  }
}

function load(base: string, route: 'plain' | 'locked', seconds: number, connections: number): Promise<autocannon.Result> {
  return autocannon({
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
}
