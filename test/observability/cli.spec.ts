import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { BackendInspection, LockBackend } from '../../lib/backends/lock-backend.interface';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { CliUsageError } from '../../lib/errors';
import { formatDuration } from '../../lib/cli/format-duration';
import { formatInspection } from '../../lib/cli/format-inspection';
import { openTarget } from '../../lib/cli/open-target';
import { parseCliArgs } from '../../lib/cli/parse-args';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, runCli, type CliIo } from '../../lib/cli/run-cli';
import { LockService, type LockInspection } from '../../lib/lock.service';
import { freeTestPort } from '../support/free-port';
import { eventually } from './support/eventually';

const REPO = join(__dirname, '..', '..');
const T0 = Date.parse('2025-03-01T12:00:00.000Z');

/** stdout/stderr that keep what was written. */
function captureIo(extra: Partial<CliIo> = {}): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    out: () => out,
    err: () => err,
    ...extra,
  };
}

/** The app's memory backend seen by the CLI: the CLI closing its service must not close the app's store. */
function viewOf(store: MemoryLockBackend): LockBackend {
  return {
    kind: store.kind,
    address: store.address,
    tryAcquire: (r) => store.tryAcquire(r),
    acquire: (r, s) => store.acquire(r, s),
    extend: (l, t) => store.extend(l, t),
    release: (l) => store.release(l),
    isLocked: (n, k) => store.isLocked(n, k),
    inspect: (n, k) => store.inspect(n, k),
    close: async () => undefined,
  };
}

describe('CLI argument parsing', () => {
  it('reads inspect and watch with their options', () => {
    expect(parseCliArgs(['inspect', '--redis', 'redis://10.0.0.5:6379/2', 'file:42'])).toEqual({
      command: 'inspect',
      target: { kind: 'redis', url: 'redis://10.0.0.5:6379/2' },
      key: 'file:42',
      prefix: 'locks',
      json: false,
      interval: 1_000,
      timeout: 5_000,
    });
    expect(
      parseCliArgs([
        'watch',
        'file:42',
        '--etcd',
        'http://a:2379, http://b:2379',
        '--prefix',
        'billing',
        '--interval',
        '250',
        '--json',
      ]),
    ).toMatchObject({
      command: 'watch',
      target: { kind: 'etcd', hosts: ['http://a:2379', 'http://b:2379'] },
      prefix: 'billing',
      interval: 250,
      json: true,
    });
    expect(parseCliArgs(['--help'])).toEqual({ command: 'help' });
    expect(parseCliArgs([])).toEqual({ command: 'help' });
  });

  it.each([
    [['inspect', 'file:42'], /--redis URL or --etcd HOSTS/],
    [['inspect', '--redis', 'redis://h:1', '--etcd', 'http://h:2', 'k'], /either --redis or --etcd/],
    [['inspect', '--redis', '10.0.0.5:6379', 'k'], /takes a URL/],
    [['inspect', '--redis', 'redis://h:1'], /needs a KEY/],
    [['inspect', '--redis', 'redis://h:1', 'a', 'b'], /one KEY/],
    [
      ['watch', '--redis', 'redis://h:1', '--interval', '10', 'k'],
      /--interval takes a whole number of milliseconds >= 100/,
    ],
    [['delete', '--redis', 'redis://h:1', 'k'], /Unknown command "delete"/],
    [['inspect', '--bogus', 'k'], /Unknown option '--bogus'/],
  ])('rejects %j', (argv, message) => {
    expect(() => parseCliArgs(argv)).toThrow(CliUsageError);
    expect(() => parseCliArgs(argv)).toThrow(message);
  });
});

describe('CLI formatting', () => {
  it('formats durations for a table column', () => {
    expect([0, 850, 3_240, 59_999, 252_000, 7_500_000].map(formatDuration)).toEqual([
      '0 ms',
      '850 ms',
      '3.2 s',
      '1 min 0 s',
      '4 min 12 s',
      '2 h 5 min',
    ]);
  });

  it('prints holders and waiters as tables', () => {
    const inspection: LockInspection = {
      key: 'file:42',
      namespace: 'locks',
      backend: 'redis',
      address: '10.0.0.5:6379',
      holders: [
        {
          holder: 'web-1/4242/api-1',
          mode: 'exclusive',
          fencingToken: 9_007_199_254_740_993n,
          since: T0 - 3_200,
          expiresAt: T0 + 26_800,
        },
      ],
      waiters: [
        { holder: 'web-2/977/api-2', mode: 'exclusive', since: T0 - 1_500 },
        { holder: 'worker-7/31/jobs', mode: 'read', since: T0 - 400 },
      ],
    };
    expect(formatInspection(inspection, T0)).toBe(
      [
        'Lock "file:42" in namespace "locks" on redis at 10.0.0.5:6379',
        'Checked at 2025-03-01T12:00:00.000Z: held, 2 waiting',
        '',
        'HOLDERS',
        '  HOLDER            MODE       FENCING TOKEN     SINCE                     HELD FOR  EXPIRES IN',
        '  web-1/4242/api-1  exclusive  9007199254740993  2025-03-01T11:59:56.800Z  3.2 s     26.8 s',
        '',
        'WAITERS (in grant order)',
        '  #  WAITER            MODE       SINCE                     WAITING FOR',
        '  1  web-2/977/api-2   exclusive  2025-03-01T11:59:58.500Z  1.5 s',
        '  2  worker-7/31/jobs  read       2025-03-01T11:59:59.600Z  400 ms',
      ].join('\n'),
    );
  });

  it('says when a key is free, when waiters are unknown, and when a holder has expired', () => {
    const base = { key: 'k', namespace: 'locks', backend: 'redis', address: 'h:1' };
    expect(formatInspection({ ...base, holders: [], waiters: [] }, T0)).toBe(
      'Lock "k" in namespace "locks" on redis at h:1\nChecked at 2025-03-01T12:00:00.000Z: free',
    );
    const unknownQueue = formatInspection(
      { ...base, holders: [{ mode: 'exclusive', permits: 3, expiresAt: T0 - 300 }] },
      T0,
    );
    expect(unknownQueue).toContain('held\n');
    expect(unknownQueue).toMatch(/\?\s+semaphore of 3\s+-\s+-\s+-\s+expired 300 ms ago/);
    expect(unknownQueue).toContain('WAITERS: not reported (the redis backend keeps no queue on the server)');
  });
});

describe('CLI end to end (memory backend)', () => {
  let store: MemoryLockBackend;
  let app: LockService;
  const open = () => new LockService(viewOf(store), { keyPrefix: 'cli-test' });

  beforeEach(() => {
    store = new MemoryLockBackend();
    app = new LockService(store, { keyPrefix: 'cli-test', instanceId: 'api-1' });
  });

  afterEach(async () => {
    await app.close();
  });

  it('inspect prints the holder and the queue of a contended key', async () => {
    const lock = await app.acquire('file:42', { ttl: 30_000 });
    const waiter = app.acquire('file:42', { waitTimeout: 20_000 });
    await eventually(async () => ((await app.inspect('file:42')).waiters?.length === 1 ? true : undefined));

    const io = captureIo({ open });
    expect(await runCli(['inspect', '--redis', 'redis://unused:1', '--prefix', 'cli-test', 'file:42'], io)).toBe(
      EXIT_OK,
    );
    const out = io.out();
    expect(out).toContain('Lock "file:42" in namespace "cli-test" on memory at in-process');
    expect(out).toContain(': held, 1 waiting');
    expect(out).toMatch(new RegExp(`${escape(app.holderId)}\\s+exclusive\\s+${lock.fencingToken}\\s+\\d{4}-`));
    expect(out).toMatch(new RegExp(`1\\s+${escape(app.holderId)}\\s+exclusive`));
    expect(out).not.toContain(lock.token);
    expect(io.err()).toBe('');

    await lock.release();
    await (await waiter).release();
  });

  it('inspect --json prints fencing tokens as strings', async () => {
    const lock = await app.acquire('file:1');
    const io = captureIo({ open });
    expect(await runCli(['inspect', '--redis', 'redis://unused:1', '--json', 'file:1'], io)).toBe(EXIT_OK);
    const parsed = JSON.parse(io.out()) as { holders: { fencingToken: string }[]; waiters: unknown[] };
    expect(parsed.holders[0].fencingToken).toBe(lock.fencingToken.toString());
    expect(parsed.waiters).toEqual([]);
    await lock.release();
  });

  it('watch redraws until the signal aborts, showing changes', async () => {
    const stop = new AbortController();
    const frames: string[] = [];
    let written = '';
    const lock = await app.acquire('file:7');
    const io: CliIo = {
      stdout: { write: (text: string) => (written += text), isTTY: true },
      stderr: { write: () => undefined },
      open,
      signal: stop.signal,
      onFrame: (frame) => {
        frames.push(written);
        written = '';
        if (frame === 1) void lock.release();
        if (frame === 3) stop.abort();
      },
    };
    expect(await runCli(['watch', '--redis', 'redis://unused:1', '--interval', '100', 'file:7'], io)).toBe(EXIT_OK);
    expect(frames).toHaveLength(3);
    // eslint-disable-next-line no-control-regex -- the frame must start with the ANSI clear-screen escape
    expect(frames[0]).toMatch(/^\u001b\[2J\u001b\[H/);
    expect(frames[0]).toContain('Every 100 ms: watching "file:7" (Ctrl-C to stop)');
    expect(frames[0]).toContain(': held');
    expect(frames[2]).toContain(': free');
  });

  it('watch stops at once on Ctrl-C even while the server does not answer, and exits 1 when its last frame failed', async () => {
    const silent = (): LockService =>
      new LockService(
        { ...viewOf(store), inspect: () => new Promise(() => undefined), close: () => new Promise(() => undefined) },
        // Its deadline timer must not outlive the test by much.
        { operationTimeout: 1_000 },
      );
    const stop = new AbortController();
    const io = { ...captureIo({ open: silent }), signal: stop.signal };
    const running = runCli(['watch', '--redis', 'redis://unused:1', 'file:7'], io);
    setTimeout(() => stop.abort(), 100);
    const startedAt = performance.now();
    expect(await running).toBe(EXIT_OK);
    expect(performance.now() - startedAt).toBeLessThan(5_000);

    const failing = (): LockService =>
      new LockService({ ...viewOf(store), inspect: () => Promise.reject(new Error('connect ECONNREFUSED')) });
    const stopFailing = new AbortController();
    const failed = {
      ...captureIo({ open: failing }),
      signal: stopFailing.signal,
      onFrame: (frame: number) => frame === 2 && stopFailing.abort(),
    };
    expect(await runCli(['watch', '--redis', 'redis://unused:1', '--interval', '100', 'file:7'], failed)).toBe(
      EXIT_FAILED,
    );
    expect(failed.out()).toContain('! LockBackendError');
  });

  it('fails with exit code 1 and a clear message when the backend cannot inspect, and 2 for a bad key', async () => {
    const blind = (): LockService => {
      const view = viewOf(store) as { inspect?: (n: string, k: string) => Promise<BackendInspection> };
      delete view.inspect;
      return new LockService(view as LockBackend);
    };
    const io = captureIo({ open: blind });
    expect(await runCli(['inspect', '--redis', 'redis://unused:1', 'file:1'], io)).toBe(EXIT_FAILED);
    expect(io.err()).toMatch(/^LockNotSupportedError: The memory backend does not support inspect\(\)/);

    const bad = captureIo({ open });
    expect(await runCli(['inspect', '--redis', 'redis://unused:1', 'x'.repeat(1_100)], bad)).toBe(EXIT_USAGE);
    expect(bad.err()).toMatch(/InvalidLockKeyError/);
    const usage = captureIo({ open });
    expect(await runCli(['inspect', 'file:1'], usage)).toBe(EXIT_USAGE);
    expect(usage.err()).toContain('Usage:');
  });
});

describe('CLI targets and process', () => {
  it('opens Redis and etcd backends without connecting, and never shows credentials', async () => {
    const redis = openTarget(
      { kind: 'redis', url: 'redis://app:s3cret@10.0.0.5:6390/1' },
      { prefix: 'billing', timeout: 1_000 },
    );
    expect([redis.backend.kind, redis.backend.address, redis.keyPrefix]).toEqual(['redis', '10.0.0.5:6390', 'billing']);
    await redis.close();

    const etcd = openTarget(
      { kind: 'etcd', hosts: ['http://10.0.0.6:2379', 'http://10.0.0.7:2379'] },
      { prefix: 'locks', timeout: 1_000, env: { ETCDCTL_USER: 'root:s3cret' } },
    );
    expect(etcd.backend.kind).toBe('etcd');
    expect(etcd.backend.address).not.toContain('s3cret');
    await etcd.close();
  });

  it('runs as a process: --help exits 0, a server that is down exits 1 without printing the password', async () => {
    const help = await runMain(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('nest-distributed-lock inspect (--redis URL | --etcd HOSTS)');

    const port = await freeTestPort();
    const down = await runMain([
      'inspect',
      '--redis',
      `redis://app:s3cret@127.0.0.1:${port}`,
      '--timeout',
      '1000',
      'file:42',
    ]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/Lock\w*Error: /);
    expect(down.stdout + down.stderr).not.toContain('s3cret');
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** lib/cli/main.ts in a child process, the way bin/nest-distributed-lock.js runs the compiled file. */
function runMain(argv: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--require', join(REPO, 'test/support/ts-register.js'), join(REPO, 'lib/cli/main.ts'), ...argv],
      {
        cwd: REPO,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}
