import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { redlockKeys } from '../../lib/backends/redlock/redlock-calls';
import { RedlockBackend } from '../../lib/backends/redlock/redlock.backend';
import { LockQuorumError, LockTimeoutError } from '../../lib/errors';
import { LockService } from '../../lib/lock.service';
import { closeRedisClient, uniqueNamespace } from '../support/backends';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { killAllWorkers } from '../support/worker';
import { spawnWorker } from '../workers/spawn-worker';
import type { SectionReport } from '../workers/worker-protocol';

const WORKERS = 10;
const ITERATIONS = 12;
const PAUSE_MS = 2;

/** Issue 17 points 2 and 4: Redlock under contention wakes one waiter per release, and a failed acquire leaves nothing. */
describe('Redlock over 3 masters under contention', () => {
  let servers: TestRedisServer[] = [];
  let admins: Redis[] = [];
  let ns: string;
  let tempDir: string;
  const opened: { close(): Promise<unknown> }[] = [];

  beforeAll(async () => {
    servers = await Promise.all([startRedis(), startRedis(), startRedis()]);
    tempDir = mkdtempSync(join(tmpdir(), 'redlock-contention-'));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    rmSync(tempDir, { recursive: true, force: true });
  });

  beforeEach(() => {
    ns = uniqueNamespace('redlock-contention');
    admins = servers.map((server) => new Redis(server.url));
  });

  afterEach(async () => {
    await killAllWorkers();
    for (const resource of opened.splice(0).reverse()) await resource.close();
    await Promise.all(admins.map((admin) => admin.quit()));
  });

  function service(): LockService {
    const clients = servers.map((server) => new Redis(server.url, { retryStrategy: () => 100 }));
    for (const client of clients) client.on('error', () => undefined);
    const locks = new LockService(new RedlockBackend({ clients }), { keyPrefix: ns });
    opened.push(locks, { close: () => Promise.all(clients.map(closeRedisClient)) });
    return locks;
  }

  /** Every key of this test on every master, except the fencing counters (they stay for ttl + retention). */
  async function keysLeft(): Promise<string[][]> {
    return Promise.all(
      admins.map(async (admin) => (await admin.keys(`${ns}:*`)).filter((key) => !key.endsWith(':fence'))),
    );
  }

  async function scriptCalls(admin: Redis): Promise<number> {
    const stats = await admin.info('commandstats');
    return [...stats.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce(
      (sum, match) => sum + Number(match[1]),
      0,
    );
  }

  it(`${WORKERS} processes on one key: each release wakes one waiter by name, every process is served, no herd`, async () => {
    const counterFile = join(tempDir, `${ns}-counter`);
    writeFileSync(counterFile, '0');
    const channel = redlockKeys(ns, 'hot').channel;
    const observer = new Redis(servers[0].url);
    const messages: string[] = [];
    observer.on('message', (_channel: string, message: string) => messages.push(message));
    await observer.subscribe(channel);
    const before = await Promise.all(admins.map(scriptCalls));

    const workers = Array.from({ length: WORKERS }, (_, worker) =>
      spawnWorker({
        mode: 'increment',
        worker,
        backend: 'redlock',
        address: servers.map((server) => server.url).join(','),
        keyPrefix: ns,
        key: 'hot',
        ttl: 10_000,
        waitTimeout: 60_000,
        iterations: ITERATIONS,
        counterFile,
        pauseMs: PAUSE_MS,
      }),
    );
    await Promise.all(workers.map((worker) => worker.message('ready', 40_000)));
    for (const worker of workers) worker.send({ type: 'go' });
    const reports = await Promise.all(workers.map((worker) => worker.message('done', 90_000)));
    await observer.quit();
    const after = await Promise.all(admins.map(scriptCalls));

    const grants = WORKERS * ITERATIONS;
    expect(readFileSync(counterFile, 'utf8')).toBe(String(grants));
    // A wake names one writer: never '*' (everyone), never several tokens.
    expect(messages.length).toBeGreaterThan(0);
    expect(messages.filter((message) => message === '*' || message.includes(' '))).toEqual([]);
    // Scripts per grant on each master: the grant, its release, the next newcomer turned away, clean-ups, fence
    // raises and re-checks (about 5 to 7). A herd, every waiter retrying on every release, costs at least the
    // release plus one acquire per waiter: WORKERS here.
    const perGrant = after.map((calls, index) => (calls - before[index]) / grants);
    expect(Math.max(...perGrant)).toBeLessThan(WORKERS - 1);
    // Not starved: between two of its sections a process waits for the others, not for re-check timers.
    const gaps = reports.flatMap((report) => waitsBetween(report.sections ?? []));
    expect(Math.max(...gaps)).toBeLessThan(1_000);
  }, 150_000);

  it('a waiter that gives up leaves no key on any master: not its lock share, not its place in line', async () => {
    const names = redlockKeys(ns, 'split');
    // Two other owners, one on each of two masters: every round of ours gets master 2 alone and gives it back.
    await admins[0].set(names.lock, 'owner-a', 'PX', 20_000);
    await admins[1].set(names.lock, 'owner-b', 'PX', 20_000);
    const locks = service();
    const waiting = locks.acquire('split', { ttl: 10_000, waitTimeout: 800 });
    await expect(waiting).rejects.toBeInstanceOf(LockTimeoutError);
    // At once, not eventually: the rejection comes after the clean-up.
    expect(await keysLeft()).toEqual([[names.lock], [names.lock], []]);
  });

  it('after a lost quorum, no key of the failed acquire remains on the surviving master', async () => {
    const gone = await Promise.all([startRedis(), startRedis()]);
    const clients = [servers[0].url, ...gone.map((server) => server.url)].map(
      // A short disconnectTimeout: a disconnect from a stopped server leaves ioredis' 2 s timer for the socket's close.
      (url) => new Redis(url, { retryStrategy: () => 100, disconnectTimeout: 200 }),
    );
    for (const client of clients) client.on('error', () => undefined);
    const locks = new LockService(new RedlockBackend({ clients, requestTimeout: 300 }), { keyPrefix: ns });
    opened.push(locks, { close: () => Promise.all(clients.map(closeRedisClient)) });
    // Known to every master first, so that the waiter has asked them all before two of them go.
    expect(await locks.isLocked('lost')).toBe(false);
    await Promise.all(gone.map((server) => server.stop()));
    // Every round: the survivor grants (and, the round lost, takes the grant back but keeps the waiter's place).
    const error = await locks.acquire('lost', { ttl: 10_000, waitTimeout: 1_000 }).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(LockQuorumError);
    // At once, not eventually: lock share, waiter entry and reservation are all gone when the caller hears.
    expect((await keysLeft())[0]).toEqual([]);
  });
});

/** ms between the end of each section and the start of the next one of the same process: its wait. */
function waitsBetween(sections: readonly SectionReport[]): number[] {
  const ordered = [...sections].sort((a, b) => (BigInt(a.start) < BigInt(b.start) ? -1 : 1));
  return ordered.slice(1).map((section, index) => Number(BigInt(section.start) - BigInt(ordered[index].end)) / 1e6);
}
