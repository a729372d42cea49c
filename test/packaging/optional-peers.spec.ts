import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { MeterProvider, TracerProvider } from '@opentelemetry/api';
import type { Etcd3, IOptions } from 'etcd3';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import type { Client as ZooKeeperClient } from 'node-zookeeper-client';
import type { createClient, RedisClientType, RedisFunctions, RedisModules, RedisScripts } from 'redis';
import * as ts from 'typescript';
import { EtcdLockBackend, ZooKeeperLockBackend } from '../../lib';
import type {
  EtcdClient,
  EtcdLockBackendOptions,
  RedisLockBackendOptions,
  RedlockBackendOptions,
  ZooKeeperClient as OurZooKeeperClient,
  ZooKeeperLockBackendOptions,
} from '../../lib';
import type { LockMetricsOptions } from '../../lib/observability/lock-metrics';
import type { LockTracingOptions } from '../../lib/observability/lock-tracing';

/**
 * An app that installed none of the optional peers (ioredis, etcd3, node-zookeeper-client, @nestjs/terminus,
 * @opentelemetry/api) type-checks against the shipped declarations with skipLibCheck off, loads the package,
 * and gets a MissingPackageError naming the package to install when it uses something that needs one.
 * The library is compiled into a temporary package whose node_modules holds only the required peers.
 */
const ROOT = resolve(__dirname, '../..');
const REQUIRED = ['@nestjs/common', '@nestjs/core', 'rxjs', 'reflect-metadata', '@types/node'];
const OPTIONAL_PEERS = [
  'ioredis',
  'redis',
  '@redis/client',
  'etcd3',
  'node-zookeeper-client',
  '@nestjs/terminus',
  '@opentelemetry/api',
];

/** Every public type that describes an optional peer's client, options or result, used as an app would. */
const CONSUMER = `
import 'reflect-metadata';
import {
  DistributedLockModule, EtcdLockBackend, LockHealthIndicator, LockService, MemoryLockBackend, RedisLockBackend,
  RedlockBackend, ZooKeeperLockBackend, attachLockTelemetry, type EtcdLockBackendOptions, type LockHealthResult,
  type RedisLockBackendOptions, type ZooKeeperLockBackendOptions,
} from 'nest-distributed-lock';
import * as everything from 'nest-distributed-lock';

const redis: RedisLockBackendOptions = { url: 'redis://127.0.0.1:6379', redisOptions: { maxRetriesPerRequest: 1 }, fairness: 'fifo' };
const etcd: EtcdLockBackendOptions = { hosts: ['http://127.0.0.1:2379'], auth: { username: 'u', password: 'p' } };
const zookeeper: ZooKeeperLockBackendOptions = { connectionString: '127.0.0.1:2181', sessionTimeout: 10_000 };
export const backends = [new RedisLockBackend(redis), new EtcdLockBackend(etcd), new ZooKeeperLockBackend(zookeeper), new MemoryLockBackend()];
export const redlock = RedlockBackend;
export const module = DistributedLockModule.forRoot({ backend: new MemoryLockBackend() });
export async function health(indicator: LockHealthIndicator): Promise<'up' | 'down'> {
  const result: LockHealthResult<'locks'> = await indicator.isHealthy('locks');
  return result.locks.status;
}
export function telemetry(locks: LockService): () => void {
  return attachLockTelemetry(locks, {});
}
export async function token(locks: LockService): Promise<string> {
  const lock = await locks.acquire('file:1');
  return JSON.stringify(lock) + lock.fencingToken.toString();
}
export const names = Object.keys(everything);
`;

describe('the package without its optional peers', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ndl-declarations-'));
    const modules = join(dir, 'node_modules');
    for (const name of REQUIRED) {
      mkdirSync(dirname(join(modules, name)), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules', name), join(modules, name), 'dir');
    }
    const pkg = join(modules, 'nest-distributed-lock');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({ name: 'nest-distributed-lock', main: 'dist/lib/index.js', types: 'dist/lib/index.d.ts' }),
    );
    emitPackage(join(pkg, 'dist', 'lib'));
    writeFileSync(join(dir, 'app.ts'), CONSUMER);
  });

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('type-check with skipLibCheck off in an app without any optional peer installed', () => {
    const program = consumerProgram([join(dir, 'app.ts')]);
    const problems = ts.getPreEmitDiagnostics(program).map(explain);
    expect(problems).toEqual([]);
    // Nothing the compiler read came from the repository's own node_modules of an optional peer.
    const read = program.getSourceFiles().map((file) => file.fileName);
    expect(read.filter((file) => OPTIONAL_PEERS.some((peer) => file.includes(`/node_modules/${peer}/`)))).toEqual([]);
    expect(read).toContain(join(dir, 'node_modules/nest-distributed-lock/dist/lib/index.d.ts'));
  });

  it('runs in a folder where the optional peers are really absent (a control for the check above)', () => {
    const control = join(dir, 'control.ts');
    writeFileSync(
      control,
      OPTIONAL_PEERS.map((peer, index) => `import type * as peer${index} from '${peer}';`).join('\n'),
    );
    const problems = ts.getPreEmitDiagnostics(consumerProgram([control]));
    expect(problems.map((problem) => problem.code)).toEqual(OPTIONAL_PEERS.map(() => 2307));
  });

  it('loads, and throws MissingPackageError naming the package for each feature that needs a missing one', () => {
    const script = `
      require('reflect-metadata');
      const lib = require('nest-distributed-lock');
      const locks = new lib.LockService(new lib.MemoryLockBackend());
      const attempts = {
        redis: () => new lib.RedisLockBackend({ url: 'redis://127.0.0.1:1' }),
        etcd: () => new lib.EtcdLockBackend({ hosts: 'http://127.0.0.1:1' }),
        zookeeper: () => new lib.ZooKeeperLockBackend({ connectionString: '127.0.0.1:1' }),
        metrics: () => lib.attachLockTelemetry(locks, { traces: false }),
        tracing: () => lib.attachLockTelemetry(locks, { metrics: false }),
        health: () => new lib.LockHealthIndicator(locks).isHealthy(),
        leaderHealth: () => new lib.LeaderHealthIndicator(new lib.LeaderElection(locks)).isLeader('leader', 'jobs'),
      };
      (async () => {
        const seen = {};
        for (const [name, attempt] of Object.entries(attempts)) {
          try { await attempt(); seen[name] = 'no error'; }
          catch (error) {
            seen[name] = { cls: error.constructor.name, name: error.name, packageName: error.packageName, message: error.message,
              lockError: error instanceof lib.LockError, missing: error instanceof lib.MissingPackageError };
          }
        }
        await locks.close();
        process.stdout.write(JSON.stringify(seen));
      })();`;
    const child = spawnSync(process.execPath, ['-e', script], { cwd: dir, encoding: 'utf8', timeout: 20_000 });
    expect(child.stderr).toBe('');
    const seen = JSON.parse(child.stdout);
    const expected = (packageName: string, feature: string) => ({
      cls: 'MissingPackageError',
      name: 'MissingPackageError',
      packageName,
      message: `${feature} needs the "${packageName}" package, which is not installed. Run: npm install ${packageName}`,
      lockError: true,
      missing: true,
    });
    expect(seen).toEqual({
      redis: expected('ioredis', 'The Redis backend'),
      etcd: expected('etcd3', 'The etcd backend'),
      zookeeper: expected('node-zookeeper-client', 'The ZooKeeper backend'),
      metrics: expected('@opentelemetry/api', 'Lock metrics'),
      tracing: expected('@opentelemetry/api', 'Lock tracing'),
      health: expected('@nestjs/terminus', 'LockHealthIndicator'),
      // Found from outside: it named LockHealthIndicator.
      leaderHealth: expected('@nestjs/terminus', 'LeaderHealthIndicator'),
    });
  });
});

describe('clients typed by our structural interfaces', () => {
  it('are checked when the backend is built: something else than the real client is a TypeError saying what to pass', () => {
    const notEtcd: EtcdClient = { kv: {}, leaseClient: {}, watch: () => undefined, close: () => undefined };
    expect(() => new EtcdLockBackend({ client: notEtcd })).toThrow(/`client` must be an etcd3 client/);
    const notZooKeeper: OurZooKeeperClient = {
      connect: () => undefined,
      close: () => undefined,
      getState: () => ({}),
      getSessionId: () => Buffer.alloc(8),
      getSessionTimeout: () => 30_000,
    };
    expect(() => new ZooKeeperLockBackend({ client: notZooKeeper })).toThrow(
      /must be a node-zookeeper-client Client .*; this one has no create, remove, exists, getChildren, getData, on, removeListener\./,
    );
  });
});

/** `tsc -p tsconfig.build.json` into `outDir`. */
function emitPackage(outDir: string): void {
  const configPath = join(ROOT, 'tsconfig.build.json');
  const config = ts.getParsedCommandLineOfConfigFile(
    configPath,
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail(explain(d)) },
  );
  if (!config) throw new Error('tsconfig.build.json could not be read');
  const program = ts.createProgram(config.fileNames, {
    ...config.options,
    outDir,
    declaration: true,
    sourceMap: false,
    declarationMap: false,
    noEmit: false,
  });
  const result = program.emit();
  const problems = result.diagnostics.map(explain);
  if (problems.length > 0) throw new Error(`declaration emit failed:\n${problems.join('\n')}`);
}

/** The app's compiler: strict, skipLibCheck off, only @types/node as global types. */
function consumerProgram(files: string[]): ts.Program {
  return ts.createProgram(files, {
    strict: true,
    skipLibCheck: false,
    noEmit: true,
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2024.d.ts'],
    types: ['node'],
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
  });
}

function explain(diagnostic: ts.Diagnostic): string {
  const where = diagnostic.file
    ? `${diagnostic.file.fileName}(${diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line + 1}): `
    : '';
  return `${where}TS${diagnostic.code} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
}

/**
 * Compile-time check, run by `tsc -p tsconfig.json` and ts-jest: the real clients and option objects of the
 * optional peers fit our structural types without a cast.
 */
export function realClientsFit(
  redis: Redis,
  cluster: Cluster,
  redisOptions: RedisOptions,
  nodeRedis: ReturnType<typeof createClient>,
  nodeRedisResp3: RedisClientType<RedisModules, RedisFunctions, RedisScripts, 3>,
  etcd: Etcd3,
  etcdOptions: IOptions,
  zookeeper: ZooKeeperClient,
  meterProvider: MeterProvider,
  tracerProvider: TracerProvider,
): unknown[] {
  const redisBackends: RedisLockBackendOptions[] = [
    { client: redis },
    { client: cluster },
    { client: nodeRedis },
    { client: nodeRedisResp3 },
    { redisOptions },
    { url: 'redis://h', redisOptions },
    { url: 'redis://h', clientPackage: 'redis' },
  ];
  const redlockBackends: RedlockBackendOptions[] = [
    { clients: [redis, redis, redis] },
    { clients: [nodeRedis, nodeRedisResp3, redis] },
  ];
  const etcdBackends: EtcdLockBackendOptions[] = [{ client: etcd }, etcdOptions];
  const zookeeperBackends: ZooKeeperLockBackendOptions[] = [{ client: zookeeper }];
  const metrics: LockMetricsOptions = { meterProvider };
  const tracing: LockTracingOptions = { tracerProvider };
  return [redisBackends, redlockBackends, etcdBackends, zookeeperBackends, metrics, tracing];
}
