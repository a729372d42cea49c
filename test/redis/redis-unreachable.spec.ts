import { join } from 'node:path';
import Redis from 'ioredis';
import type { LockRenewal } from '../../lib';
import { LockLostError } from '../../lib/errors';
import { LockBackendError } from '../../lib/errors/lock-backend.error';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { LockService } from '../../lib/lock.service';
import { freeTestPort } from '../support/free-port';
import { killAllLineProcesses, LineProcess } from '../support/line-process';
import { startRedis } from '../support/redis-server';
import { eventually, within } from '../support/time';
import { TS_REGISTER } from '../support/worker';
import { deadline, lockRequest, NAMESPACE } from './redis-spec-helpers';

describe('Redis server unreachable', () => {
  let port: number;

  beforeAll(async () => {
    port = await freeTestPort();
  });

  afterEach(() => killAllLineProcesses());

  it('fails a waiting acquire with a LockBackendError naming the address when the deadline passes', async () => {
    const backend = new RedisLockBackend({ url: `redis://127.0.0.1:${port}` });
    const wait = deadline(300);
    const startedAt = performance.now();
    const error = await backend.acquire(lockRequest('down'), wait.signal).catch((caught: unknown) => caught);
    expect(performance.now() - startedAt).toBeLessThan(3_000);
    expect(error).toBeInstanceOf(LockBackendError);
    expect((error as LockBackendError).address).toBe(`127.0.0.1:${port}`);
    expect((error as Error).message).toContain(`127.0.0.1:${port}`);
    expect((error as Error).message).toMatch(/ECONNREFUSED|connect/);
    const closedAt = performance.now();
    await backend.close();
    expect(performance.now() - closedAt).toBeLessThan(3_000);
  });

  it('rejects tryAcquire, extend, release and isLocked with LockBackendErrors when the client gives up', async () => {
    // disconnectTimeout 0: its socket failed already, so disconnect() need not wait 2 s for a 'close' that never comes.
    const client = new Redis({
      host: '127.0.0.1',
      port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      disconnectTimeout: 0,
    });
    client.on('error', () => undefined);
    const backend = new RedisLockBackend({ client });
    const request = lockRequest('down');
    const lock = { ...request, fencingToken: 1n };
    const operations: [string, Promise<unknown>][] = [
      ['tryAcquire', backend.tryAcquire(request)],
      ['extend', backend.extend(lock, 1_000)],
      ['release', backend.release(lock)],
      ['isLocked', backend.isLocked(NAMESPACE, 'down')],
    ];
    for (const [operation, outcome] of operations) {
      const error = await outcome.catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(LockBackendError);
      expect(error).toMatchObject({ backend: 'redis', address: `127.0.0.1:${port}`, operation });
    }
    await backend.close();
    client.disconnect();
  });

  it('ends acquire() by its waitTimeout when that is shorter than operationTimeout, first try included, and names acquire', async () => {
    const locks = new LockService(new RedisLockBackend({ url: `redis://127.0.0.1:${port}` }), {
      keyPrefix: NAMESPACE,
      operationTimeout: 20_000,
    });
    try {
      const startedAt = performance.now();
      const error = await locks.acquire('down', { waitTimeout: 500 }).catch((caught: unknown) => caught);
      // Before, the first try waited for the whole operationTimeout (20 s here) while ioredis queued it.
      expect(performance.now() - startedAt).toBeLessThan(5_000);
      expect(error).toBeInstanceOf(LockBackendError);
      expect(error).toMatchObject({ operation: 'acquire', address: `127.0.0.1:${port}` });
      expect((error as Error).message).toContain('no reply within waitTimeout=500 ms');
    } finally {
      await locks.close();
    }
  });

  it.each(['ioredis', 'redis'] as const)(
    'ends a wait whose server died meanwhile with a LockBackendError, not "busy" (%s)',
    async (clientPackage) => {
      const server = await startRedis();
      // A short operationTimeout: close() then gives up on the dead server's releases soon.
      const options = { keyPrefix: NAMESPACE, operationTimeout: 1_000 };
      const holder = new LockService(new RedisLockBackend({ url: server.url }), options);
      const waiter = new LockService(new RedisLockBackend({ url: server.url, clientPackage }), options);
      try {
        await holder.acquire('dies', { ttl: 30_000 });
        const waiting = waiter.acquire('dies', { waitTimeout: 3_000 }).catch((caught: unknown) => caught);
        // Killed once the server has answered the waiter (its FIFO entry exists): an earlier answer said "busy".
        const admin = new Redis(server.url);
        try {
          await eventually(async () => (await admin.exists(`${NAMESPACE}:{dies}:queue`)) === 1, 'the waiter queued');
        } finally {
          admin.disconnect();
        }
        await server.kill('SIGKILL');
        const error = await waiting;
        expect(error).toBeInstanceOf(LockBackendError);
        // node-redis fails the call in flight at once; ioredis queues it, and the deadline ends it.
        expect((error as Error).message).toMatch(/failed during acquire: .*\(connection (reconnecting|connecting|end)/);
      } finally {
        await Promise.all([holder.close(), waiter.close()]);
        await server.stop();
      }
    },
  );

  it('names acquire, not the try it starts with, when the server answers with an error', async () => {
    const server = await startRedis({ password: 'right-password' });
    const url = server.url.replace('right-password', 'wrong-password');
    const locks = new LockService(new RedisLockBackend({ url }), { keyPrefix: NAMESPACE });
    try {
      for (const [operation, call] of [
        ['acquire', () => locks.acquire('refused', { waitTimeout: 2_000 })],
        ['tryAcquire', () => locks.tryAcquire('refused')],
      ] as const) {
        const error = await call().catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(LockBackendError);
        expect(error).toMatchObject({ operation });
        expect((error as Error).message).toContain(`failed during ${operation}: WRONGPASS`);
        // The server answered: the hint is about credentials, not about whether it runs.
        expect((error as Error).message).toContain('check the user, its password and its permissions');
        expect((error as Error).message).not.toContain('wrong-password');
      }
    } finally {
      await locks.close();
      await server.stop();
    }
  });

  it('warns at-risk while validity remains, then reports the loss, when the server goes silent (SIGSTOP)', async () => {
    const server = await startRedis();
    const locks = new LockService(new RedisLockBackend({ url: server.url }), { keyPrefix: NAMESPACE });
    try {
      const lock = await locks.acquire('silent', { ttl: 3_000 });
      const events: LockRenewal[] = [];
      const ended = new Promise<unknown>((resolve) =>
        lock.renewals$.subscribe({ next: (event) => events.push(event), error: resolve }),
      );
      server.pause();
      const error = await ended;
      server.resume();
      expect(error).toBeInstanceOf(LockLostError);
      expect(lock.signal.aborted).toBe(true);
      const warning = events.find((event) => event.type === 'at-risk');
      expect(warning).toMatchObject({ type: 'at-risk', remaining: expect.any(Number) });
      expect((warning as { remaining: number }).remaining).toBeGreaterThan(0);
    } finally {
      server.resume();
      await locks.close();
      await server.stop();
    }
  });

  it('ends a wait with a LockBackendError, not "busy", when the server stopped answering (SIGSTOP) before its deadline', async () => {
    const server = await startRedis();
    const holder = new LockService(new RedisLockBackend({ url: server.url }), { keyPrefix: NAMESPACE });
    const waiter = new LockService(new RedisLockBackend({ url: server.url, recheckInterval: 500 }), {
      keyPrefix: NAMESPACE,
      operationTimeout: 30_000,
    });
    try {
      await holder.acquire('frozen', { ttl: 30_000 });
      const waiting = waiter.acquire('frozen', { waitTimeout: 4_000 }).catch((caught: unknown) => caught);
      // The server answered the waiter's first try ("busy"); then it stops answering, with its connections open.
      await eventually(
        async () => ((await holder.inspect('frozen')).waiters?.length ?? 0) > 0,
        'the waiter queued',
        5_000,
      );
      server.pause();
      const error = await waiting;
      server.resume();
      expect(error).toBeInstanceOf(LockBackendError);
      expect((error as Error).message).toMatch(/no answer from the server/);
    } finally {
      server.resume();
      await waiter.close();
      await holder.close();
      await server.stop();
    }
  });

  it('lets the process exit as soon as close() resolved: no disconnect timer of its own connections holds it', async () => {
    const worker = LineProcess.spawn(process.execPath, [
      '--require',
      TS_REGISTER,
      join(__dirname, 'fixtures', 'close-unreachable.ts'),
      String(port),
    ]);
    expect(await worker.nextLine('DONE', 30_000)).toBe('DONE LockBackendError');
    const closedAt = performance.now();
    const { code } = await within(worker.exited, 10_000, `the process exiting (output: ${worker.output})`);
    expect(code).toBe(0);
    // ioredis' default disconnectTimeout kept it alive 2 s longer: the client's socket had failed already, so the
    // 'close' it waits for never came.
    expect(performance.now() - closedAt).toBeLessThan(1_500);
  });
});
