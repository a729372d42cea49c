/**
 * `npm run bench`: ours against the peer libraries and the raw round-trip limits, in one run against a
 * fresh redis-server and etcd that the bench starts on free loopback ports and stops at the end.
 *
 *   node --require ./test/support/ts-register.js bench/run.ts [--quick] [--only=uncontended,hot-key,many-keys,renewing,http,xproc,footprint] [--stores=redis,etcd,zookeeper]
 *
 * A full run prints every table and writes bench/RESULTS.md. --quick (shorter runs), --only and --stores print
 * without writing, unless --out=<file> is given.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, relative } from 'node:path';
import { describeLoad, describeMachine, MachineInfo } from './lib/machine';
import { failedSection, renderSection, renderTable, Section } from './lib/report';
import { BenchServers } from './lib/servers';
import {
  ADAPTERS as ALL_ADAPTERS,
  REDIS_UNCONTENDED_FLOOR,
  withNodeRedisRow,
  ZOOKEEPER_UNCONTENDED,
} from './peers/registry';
import { etcd3Lock } from './peers/etcd3-lock';
import { oursEtcd, oursRedis, oursRedisUnfair, oursRedisNodeRedis, oursRedlockOneMaster } from './peers/ours';
import { rawRedisHandoff } from './peers/raw-redis-handoff';
import { redisSemaphore } from './peers/redis-semaphore';
import { redlockV4 } from './peers/redlock-v4';
import { crossProcess, CrossProcessSettings } from './scenarios/cross-process';
import { footprint, FootprintSettings } from './scenarios/footprint';
import { goals, Results } from './scenarios/goals';
import { hotKey, HotKeySettings } from './scenarios/hot-key';
import { http, HttpSettings } from './scenarios/http';
import { manyKeys, ManyKeysSettings } from './scenarios/many-keys';
import { renewing, RenewingSettings } from './scenarios/renewing';
import { uncontended, UncontendedSettings } from './scenarios/uncontended';

const SCENARIOS = ['uncontended', 'hot-key', 'many-keys', 'renewing', 'http', 'xproc', 'footprint'] as const;
type Scenario = (typeof SCENARIOS)[number];

interface Settings {
  uncontended: UncontendedSettings;
  hotKey: HotKeySettings;
  manyKeys: ManyKeysSettings;
  renewing: RenewingSettings;
  http: HttpSettings;
  crossProcess: CrossProcessSettings;
  footprint: FootprintSettings;
}

/** Scenario 6's rows, side by side: our Redis configurations and the Redis peers, then etcd. */
const CROSS_PROCESS_SPECS = [
  oursRedis,
  oursRedisNodeRedis,
  oursRedisUnfair,
  redisSemaphore,
  redlockV4,
  oursRedlockOneMaster,
  rawRedisHandoff,
  oursEtcd,
  etcd3Lock,
];

const FULL: Settings = {
  uncontended: { durationMs: 3_000, rounds: 12, warmupMs: 300 },
  hotKey: {
    durationMs: 2_500,
    maxGrants: 50_000,
    inProcess: [2, 16, 64],
    processes: 4,
    contendersPerProcess: 4,
    thinkMs: 1,
  },
  manyKeys: { durationMs: 2_400, rounds: 3, keys: 1_000, workers: 64 },
  renewing: { locks: 10_000, windowMs: 5_000, ttlMs: 3_000, concurrency: 200 },
  http: {
    durationSeconds: 2,
    warmupSeconds: 2,
    connections: 16,
    rounds: { memory: 14, redis: 10 },
    cpuRate: 600,
    cpuSeconds: 3,
  },
  crossProcess: { windowMs: 2_000, rounds: 5, processes: 4, contendersPerProcess: 4, holdMs: 1 },
  footprint: { names: 1_000_000, concurrency: 256, drainBudgetMs: 120_000 },
};

const QUICK: Settings = {
  uncontended: { durationMs: 500, rounds: 2, warmupMs: 100 },
  hotKey: { ...FULL.hotKey, durationMs: 800 },
  manyKeys: { ...FULL.manyKeys, durationMs: 800 },
  renewing: { ...FULL.renewing, locks: 2_000, windowMs: 2_000 },
  http: { ...FULL.http, durationSeconds: 1, cpuSeconds: 2, rounds: { memory: 4, redis: 4 } },
  crossProcess: { ...FULL.crossProcess, windowMs: 1_000, rounds: 2 },
  footprint: { names: 50_000, concurrency: 128, drainBudgetMs: 30_000 },
};

const ROOT = join(__dirname, '..');
const COMMAND = 'node --require ./test/support/ts-register.js bench/run.ts';

interface Options {
  readonly quick: boolean;
  readonly only: readonly Scenario[];
  /** Only the libraries on these stores (every scenario still starts all three servers). */
  readonly stores: readonly string[];
  readonly out: string | undefined;
}

function parseOptions(argv: readonly string[]): Options {
  let quick = false;
  let only: Scenario[] = [...SCENARIOS];
  let out: string | undefined;
  let stores = ['redis', 'etcd', 'zookeeper'];
  for (const argument of argv) {
    if (argument === '--quick') quick = true;
    else if (argument.startsWith('--only=')) {
      only = argument.slice('--only='.length).split(',') as Scenario[];
      const unknown = only.filter((name) => !SCENARIOS.includes(name));
      if (unknown.length)
        throw new Error(`unknown scenario(s) ${unknown.join(', ')}; choose from ${SCENARIOS.join(', ')}`);
    } else if (argument.startsWith('--stores=')) stores = argument.slice('--stores='.length).split(',');
    else if (argument.startsWith('--out=')) out = argument.slice('--out='.length);
    else
      throw new Error(
        `unknown argument ${argument}. Usage: ${COMMAND} [--quick] [--only=${SCENARIOS.join(',')}] [--out=file]`,
      );
  }
  const partial = quick || only.length < SCENARIOS.length || stores.length < 3;
  return { quick, only, stores, out: out ?? (partial ? undefined : join(__dirname, 'RESULTS.md')) };
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const settings = options.quick ? QUICK : FULL;
  const machine = describeMachine();
  const began = performance.now();
  const sections: Section[] = [];
  const results: Results = {};
  if (machine.loadAtStart[0] > machine.cores / 2) {
    console.warn(
      `warning: load average ${describeLoad(machine.loadAtStart)} on ${machine.cores} cores; other work will skew the figures.`,
    );
  }
  const adapters = ALL_ADAPTERS.filter((spec) => options.stores.includes(spec.store));
  const servers = await BenchServers.start();
  console.log(
    `bench: redis-server ${servers.redis.url}, etcd ${servers.etcd.endpoint}, ZooKeeper ${servers.zookeeper.connectionString}${options.quick ? ' (quick)' : ''}\n`,
  );
  const step = async <T>(
    name: Scenario,
    heading: string,
    run: () => Promise<{ section: Section; rows: T }>,
    keep: (rows: T) => void,
  ) => {
    if (!options.only.includes(name)) return;
    const started = performance.now();
    try {
      const { section, rows } = await run();
      keep(rows);
      sections.push(section);
    } catch (error) {
      sections.push(failedSection(heading, error));
    }
    console.log(renderSection(sections[sections.length - 1]));
    console.log(`(${name}: ${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
  };
  try {
    await step(
      'uncontended',
      '1. Uncontended',
      () =>
        uncontended(
          servers,
          [
            ...withNodeRedisRow(adapters),
            ...REDIS_UNCONTENDED_FLOOR.filter((spec) => options.stores.includes(spec.store)),
            ...ZOOKEEPER_UNCONTENDED.filter((spec) => options.stores.includes(spec.store)),
          ],
          settings.uncontended,
        ),
      (rows) => (results.uncontended = rows),
    );
    await step(
      'hot-key',
      '2. One hot key',
      () => hotKey(servers, withNodeRedisRow(adapters.filter((spec) => spec.waits)), settings.hotKey),
      (rows) => (results.hotKey = rows),
    );
    await step(
      'many-keys',
      '3. Many keys',
      () =>
        manyKeys(
          servers,
          adapters.filter((spec) => spec.waits),
          settings.manyKeys,
        ),
      (rows) => (results.manyKeys = rows),
    );
    await step(
      'renewing',
      '4. Held locks renewing',
      () =>
        renewing(
          servers,
          adapters.filter((spec) => spec.renews),
          settings.renewing,
        ),
      (rows) => (results.renewing = rows),
    );
    await step(
      'http',
      '5. HTTP',
      () => http(servers, settings.http),
      (rows) => (results.http = rows),
    );
    await step(
      'xproc',
      '6. Cross-process contention',
      () => crossProcess(servers, CROSS_PROCESS_SPECS, settings.crossProcess),
      (rows) => (results.crossProcess = rows),
    );
    await step(
      'footprint',
      '7. Footprint',
      () => footprint(servers, settings.footprint),
      (rows) => (results.footprint = rows),
    );
  } finally {
    await servers.stop();
  }
  const summary = goals(results);
  console.log(renderSection(summary));
  const seconds = (performance.now() - began) / 1000;
  console.log(`bench finished in ${seconds.toFixed(0)} s`);
  if (options.out) {
    writeFileSync(options.out, report(machine, loadavg(), options, seconds, summary, sections));
    console.log(`wrote ${relative(process.cwd(), options.out)}`);
  }
}

function report(
  machine: MachineInfo,
  loadAtEnd: readonly number[],
  options: Options,
  seconds: number,
  summary: Section,
  sections: Section[],
): string {
  const versions = renderTable({
    title: 'Versions',
    notes: [],
    headers: ['software', 'version'],
    textColumns: 2,
    rows: Object.entries(machine.versions),
  });
  return [
    '# Benchmark results',
    '',
    `Written by \`npm run bench\` (bench/run.ts) on ${machine.date}. Generated: run the bench again rather than editing it.`,
    '',
    '## Machine',
    '',
    `- CPU: ${machine.cpu}, ${machine.cores} cores`,
    `- Memory: ${machine.memoryGiB} GiB`,
    `- OS: ${machine.os}`,
    `- Load average (1 / 5 / 15 min): ${describeLoad(machine.loadAtStart)} at the start, ${describeLoad(loadAtEnd)} at the end ` +
      '(the bench itself adds about 2 while it runs).',
    '',
    versions,
    '## Commands',
    '',
    `- \`npm run bench\` = \`${COMMAND}${options.quick ? ' --quick' : ''}\` (${relative(ROOT, __filename)}), took ${seconds.toFixed(0)} s.`,
    '- Servers, started by the bench itself on free loopback ports and stopped at the end (test/support/redis-server.ts, etcd-server.ts):',
    '  - `redis-server --port <free> --bind 127.0.0.1 --save "" --appendonly no --dir <tmp>`',
    '  - `etcd --data-dir <tmp> --listen-client-urls http://127.0.0.1:<free> --heartbeat-interval 50 --election-timeout 500` (single member, WAL on the local disk)',
    '- Every library gets its own ioredis / etcd3 client with default options; forked processes (scenario 2 with several processes, scenarios 4 and 6, the HTTP app) each open their own.',
    '- Scenarios 2 to 4 and 6 fork workers with the same TypeScript register hook; scenario 4 adds `--expose-gc`. Scenario 5 runs autocannon in the bench process against `bench/http-app.ts`.',
    '',
    '## Reading these results',
    '',
    '- Client, server and (in scenarios 2, 4 and 5) extra processes share the same cores, so most figures are CPU-bound, not network-bound. ' +
      'The limit rows pay the same client-library costs (ioredis / etcd3), so the ratios are the fair part.',
    '- Polling peers retry on a timer. With many contenders their combined polls land often, which shortens handoffs at the price of ' +
      'server calls per grant (scenario 2); the 2-contender rows show the poll interval itself.',
    "- etcd figures include a WAL fsync per write on this machine's disk: every lease grant, put, delete and revoke.",
    '',
    renderSection(summary),
    ...sections.map(renderSection),
  ].join('\n');
}

// Ctrl-C: exit through process.exit so the exit hooks kill the servers and workers we started.
process.once('SIGINT', () => process.exit(130));
process.once('SIGTERM', () => process.exit(143));

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
