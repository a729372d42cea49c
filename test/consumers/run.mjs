#!/usr/bin/env node
// Installs the packed library into the consumer apps the way a user does, and tests it there:
//   1. `npm pack` (prepack builds), then publint and @arethetypeswrong/cli on the tarball;
//   2. per fixture (Nest 12 ESM, Nest 11 CommonJS; the two side by side, each with its own redis-server, output
//      lines prefixed with the fixture and client) and per Redis client (the newest ioredis 5 and 6 and node-redis 6
//      on Nest 12; the lowest the peer ranges allow, ioredis 5.0.0 and node-redis 5.0.0, and ioredis 6 on Nest 11):
//      a plain `npm install` of the tarball (no --legacy-peer-deps), a type-check with
//      skipLibCheck off while no optional peer other than that client is installed, an end-to-end test
//      against a real redis-server, and the installed CLI's `inspect`;
//   3. then, once per fixture (with ioredis 6), the other optional peers (@nestjs/terminus of the fixture's Nest major,
//      @nestjs/schedule, etcd3, node-zookeeper-client, @opentelemetry/api, the other Redis client) are added, every
//      ```ts block of README.md and docs/ is type-checked as its own module,
//      and a terminus health check runs; on Nest 12, the app's Vitest spec runs as `nest new`'s `vitest run` would.
// Usage: node test/consumers/run.mjs [--fixture nest12-esm|nest11-cjs] [--client ioredis@5|ioredis@6|redis@5|redis@6] [--keep]
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
// `full`: the client whose install also gets phase 2 (every optional peer, the doc blocks, terminus); the
// doc blocks and the health check do not depend on the client, so once per fixture is enough.
const FIXTURES = {
  'nest12-esm': { nestMajor: 12, clients: ['ioredis@5', 'ioredis@6', 'redis@6'], full: 'ioredis@6' },
  // The lowest versions the peer ranges allow, on the older Nest.
  'nest11-cjs': { nestMajor: 11, clients: ['ioredis@5.0.0', 'ioredis@6', 'redis@5.0.0'], full: 'ioredis@6' },
};
/** The app's Redis module for each client package (test/consumers/app/clients). */
const CLIENT_MODULES = { ioredis: 'ioredis.module.ts', redis: 'node-redis.module.ts' };
/** ioredis before 5.2.5 exports the client class as the module's default only, not by the name `Redis`. */
const DEFAULT_EXPORT_ONLY = new Set(['ioredis@5.0.0']);
const OPTIONAL_PEERS = ['etcd3', 'node-zookeeper-client', '@nestjs/terminus', '@opentelemetry/api', '@nestjs/schedule'];
const REPORTED = [
  'nest-distributed-lock',
  '@nestjs/common',
  '@nestjs/core',
  'ioredis',
  'redis',
  'typescript',
  'rxjs',
  '@nestjs/terminus',
  '@nestjs/schedule',
];

const args = process.argv.slice(2);
const option = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const fixtures = option('--fixture') ? [option('--fixture')] : Object.keys(FIXTURES);
for (const fixture of fixtures)
  if (!FIXTURES[fixture]) fail(`unknown fixture ${fixture}; known: ${Object.keys(FIXTURES).join(', ')}`);

function fail(message) {
  console.error(`consumers: ${message}`);
  process.exit(2);
}

function run(command, commandArgs, cwd, env = {}) {
  console.log(`$ (${relative(root, cwd) || '.'}) ${command} ${commandArgs.join(' ')}`);
  execFileSync(command, commandArgs, { cwd, stdio: 'inherit', env: commandEnv(env) });
}

/** npm_config_* from an outer `npm run` (or a user's .npmrc) must not loosen peer checks for the consumer. */
function commandEnv(env) {
  return { ...process.env, npm_config_legacy_peer_deps: 'false', npm_config_force: 'false', ...env };
}

/**
 * `run` for one fixture while the other runs beside it: each line of output is prefixed with the fixture's name.
 * Rejects with the command and its exit code.
 */
function runPrefixed(prefix, command, commandArgs, cwd, env = {}) {
  const say = (line) => console.log(`[${prefix}] ${line}`);
  say(`$ (${relative(root, cwd) || '.'}) ${command} ${commandArgs.join(' ')}`);
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, commandArgs, {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: commandEnv(env),
    });
    for (const stream of [child.stdout, child.stderr]) {
      let pending = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk) => {
        const lines = (pending + chunk).split('\n');
        pending = lines.pop();
        lines.forEach(say);
      });
      stream.on('end', () => pending && say(pending));
    }
    child.once('error', reject);
    child.once('close', (code, signal) =>
      code === 0
        ? resolveRun()
        : reject(new Error(`${command} ${commandArgs.join(' ')} exited with ${code ?? signal}`)),
    );
  });
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

async function startRedis(dir) {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise((ready, reject) => {
    let output = '';
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${output}`)));
    child.stdout.on('data', (chunk) => {
      output += chunk;
      if (output.includes('Ready to accept connections')) ready();
    });
  });
  child.stdout.resume();
  return { url: `redis://127.0.0.1:${port}`, stop: () => child.kill('SIGTERM') };
}

/** Every ```ts block of the README and docs/, each as its own module file. */
function extractDocBlocks(target) {
  mkdirSync(target, { recursive: true });
  const docs = ['README.md', ...listMarkdown(join(root, 'docs')).map((file) => relative(root, file))];
  let count = 0;
  for (const doc of docs) {
    const text = readFileSync(join(root, doc), 'utf8');
    const blocks = [...text.matchAll(/^```(?:ts|typescript)\s*\n([\s\S]*?)^```/gm)];
    blocks.forEach((block, index) => {
      const line = text.slice(0, block.index).split('\n').length;
      const name = `${doc.replace(/[^A-Za-z0-9]+/g, '-')}-line-${line}.ts`;
      writeFileSync(join(target, name), `// ${doc}, block ${index + 1} (line ${line})\n${block[1]}\nexport {};\n`);
      count++;
    });
  }
  return count;
}

function listMarkdown(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? listMarkdown(join(dir, entry.name))
      : entry.name.endsWith('.md')
        ? [join(dir, entry.name)]
        : [],
  );
}

function installedVersions(dir) {
  const versions = {};
  for (const name of REPORTED) {
    const manifest = join(dir, 'node_modules', name, 'package.json');
    versions[name] = existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')).version : '-';
  }
  return versions;
}

/**
 * The compiled test files under `subdir` of the fixture `dir`, relative to the fixture. Named one by one: Node 20
 * runs the tests of a directory given to `node --test`, Node 22 and later take only files and globs (a directory is
 * "Cannot find module").
 */
function testFiles(dir, subdir) {
  const files = readdirSync(join(dir, subdir), { recursive: true })
    .map(String)
    .filter((name) => name.endsWith('.test.js'))
    .map((name) => join(subdir, name));
  if (files.length === 0) throw new Error(`no compiled *.test.js files under ${join(dir, subdir)}`);
  return files.sort();
}

async function testFixture(fixture, client, tarball, redisUrl, work) {
  // `ioredis@6`: the newest 6.x; `ioredis@5.0.0`: exactly that version.
  const [clientPackage, clientVersion] = client.split('@');
  const clientRange = clientVersion.includes('.') ? clientVersion : `^${clientVersion}`;
  const dir = join(work, `${fixture}-${clientPackage}${clientVersion}`);
  const sh = (command, commandArgs, env) => runPrefixed(`${fixture} ${client}`, command, commandArgs, dir, env);
  cpSync(join(here, fixture), dir, { recursive: true });
  cpSync(join(here, 'app', 'src'), join(dir, 'src'), { recursive: true });
  cpSync(join(here, 'app', 'test'), join(dir, 'test'), { recursive: true });
  const redisModule = readFileSync(join(here, 'app', 'clients', CLIENT_MODULES[clientPackage]), 'utf8');
  writeFileSync(
    join(dir, 'src', 'redis.module.ts'),
    DEFAULT_EXPORT_ONLY.has(client)
      ? redisModule.replace("import { Redis } from 'ioredis';", "import Redis from 'ioredis';")
      : redisModule,
  );

  // Phase 1: the library and one Redis client only, as a Redis-only user installs it.
  await sh('npm', ['install', '--no-audit', '--no-fund', tarball, `${clientPackage}@${clientRange}`]);
  const otherClient = clientPackage === 'ioredis' ? 'redis' : 'ioredis';
  const present = [...OPTIONAL_PEERS, otherClient].filter((name) => existsSync(join(dir, 'node_modules', name)));
  if (present.length > 0)
    throw new Error(`optional peers were installed without being asked for: ${present.join(', ')}`);
  await sh('npx', ['tsc', '-p', 'tsconfig.json']);
  await sh('node', ['--test', ...testFiles(dir, join('dist', 'test'))], { REDIS_URL: redisUrl });
  // The installed command, as docs/cli.md runs it (its bin loads Nest before the CommonJS build).
  await sh('npx', ['--no-install', 'nest-distributed-lock', 'inspect', '--redis', redisUrl, 'consumer:cli']);
  if (client !== FIXTURES[fixture].full && option('--client') === undefined)
    return { blocks: '-', versions: installedVersions(dir) };

  // Phase 2: every optional peer, the README's and docs' TypeScript blocks, and a terminus health check.
  const { nestMajor } = FIXTURES[fixture];
  // @nestjs/schedule 6 goes with Nest 11, 12 with Nest 12. The doc blocks use both Redis clients.
  const scheduleMajor = nestMajor === 11 ? 6 : nestMajor;
  const otherClientSpec = otherClient === 'redis' ? `redis@^${nestMajor === 11 ? 5 : 6}` : 'ioredis@^6';
  await sh('npm', [
    'install',
    '--no-audit',
    '--no-fund',
    `@nestjs/terminus@^${nestMajor}`,
    `@nestjs/schedule@^${scheduleMajor}`,
    'etcd3',
    'node-zookeeper-client',
    '@opentelemetry/api',
    otherClientSpec,
    // Nest 12's `nest new` tests with Vitest.
    ...(nestMajor >= 12 ? ['vitest@^4'] : []),
  ]);
  cpSync(join(here, 'app', 'extras'), join(dir, 'extras'), { recursive: true });
  const blocks = extractDocBlocks(join(dir, 'doc-blocks'));
  writeFileSync(
    join(dir, 'tsconfig.extras.json'),
    JSON.stringify(
      { extends: './tsconfig.json', include: ['src', 'test', 'extras', 'doc-blocks', join(here, 'doc-prelude.d.ts')] },
      null,
      2,
    ),
  );
  await sh('npx', ['tsc', '-p', 'tsconfig.extras.json']);
  await sh('node', ['--test', ...testFiles(dir, join('dist', 'extras'))], { REDIS_URL: redisUrl });
  if (nestMajor >= 12) {
    cpSync(join(here, 'app', 'vitest'), join(dir, 'vitest'), { recursive: true });
    writeFileSync(
      join(dir, 'vitest.config.e2e.mjs'),
      "export default { test: { root: './', include: ['vitest/**/*.e2e-spec.ts'] } };\n",
    );
    await sh('npx', ['vitest', 'run', '--config', './vitest.config.e2e.mjs'], { REDIS_URL: redisUrl });
  }
  return { blocks, versions: installedVersions(dir) };
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'ndl-consumers-'));
  const results = [];
  const servers = [];
  try {
    run('npm', ['pack', '--pack-destination', work], root);
    const tarball = join(
      work,
      readdirSync(work).find((name) => name.endsWith('.tgz')),
    );
    run('npx', ['publint', '--strict', tarball], root);
    run('npx', ['attw', tarball], root);

    // The fixtures run side by side (installs wait on the registry, type-checks use a core each), each with its
    // own redis-server so that their end-to-end tests never share keys; clients one after another per fixture.
    const rows = await Promise.all(
      fixtures.map(async (fixture) => {
        const fixtureRows = [];
        const redis = await startRedis(work);
        servers.push(redis);
        for (const client of option('--client') ? [option('--client')] : FIXTURES[fixture].clients) {
          const row = { fixture, client };
          try {
            Object.assign(row, await testFixture(fixture, client, tarball, redis.url, work), { passed: true });
          } catch (error) {
            Object.assign(row, { passed: false, error: error.message.split('\n')[0] });
          }
          fixtureRows.push(row);
        }
        return fixtureRows;
      }),
    );
    results.push(...rows.flat());
  } finally {
    servers.forEach((server) => server.stop());
    if (!args.includes('--keep')) rmSync(work, { recursive: true, force: true });
    else console.log(`kept ${work}`);
  }

  console.log('\nConsumer matrix (versions are what npm chose):');
  console.log(`| fixture | client | result | doc blocks | ${REPORTED.join(' | ')} |`);
  console.log(`|---|---|---|---|${REPORTED.map(() => '---').join('|')}|`);
  for (const row of results) {
    const versions = REPORTED.map((name) => row.versions?.[name] ?? '?');
    console.log(
      `| ${row.fixture} | ${row.client} | ${row.passed ? 'pass' : `FAIL: ${row.error}`} | ${row.blocks ?? '?'} | ${versions.join(' | ')} |`,
    );
  }
  const failed = results.filter((row) => !row.passed).length;
  console.log(`\nconsumers: ${results.length - failed} passed, ${failed} failed`);
  process.exitCode = failed > 0 ? 1 : 0;
}

await main();
