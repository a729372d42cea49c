import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';
import { LockTimeoutError } from '../../lib/errors';
import { redisLockKeys, redisSemaphoreKeys } from '../../lib/backends/redis/redis-keys';
import { RedisLockBackend, type RedisLockBackendTuning } from '../../lib/backends/redis/redis-lock.backend';
import type { LockHandle } from '../../lib/lock-handle';
import type { LockOptions } from '../../lib/lock-options';
import { LockService } from '../../lib/lock.service';
import { closeNodeRedisClient, createNodeRedisClient, uniqueNamespace } from '../support/backends';
import { killAllWorkers } from '../support/worker';
import { forkKindsWorker } from './kinds-workers';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { eventually } from './redis-spec-helpers';

const MARGIN = 5_000;

/** The app's client the suite's services use (forked workers keep ioredis: clients of both kinds share one queue). */
type ClientKind = 'ioredis' | 'node-redis';

describe.each<ClientKind>(['ioredis', 'node-redis'])('Redis FIFO mode (fairness: "fifo") over %s', (clientKind) => {
  let server: TestRedisServer;
  let admin: Redis;
  let ns: string;
  const opened: { locks: LockService; closeClient: () => Promise<unknown> }[] = [];

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
  });

  afterAll(async () => {
    await admin?.quit();
    await server?.stop();
  });

  beforeEach(() => {
    ns = uniqueNamespace('fifo');
  });

  afterEach(async () => {
    await killAllWorkers();
    for (const { locks, closeClient } of opened.splice(0)) {
      await locks.close();
      await closeClient();
    }
  });

  /** A FIFO LockService on its own connection. Re-checks only every 30 s unless told: wake-ups come from the server. */
  function service(tuning: RedisLockBackendTuning = {}): LockService {
    const options = { fairness: 'fifo', recheckInterval: 30_000, ...tuning } as const;
    let backend: RedisLockBackend;
    let closeClient: () => Promise<unknown>;
    if (clientKind === 'node-redis') {
      const client = createNodeRedisClient(server.url, 2);
      backend = new RedisLockBackend({ client, ...options });
      closeClient = () => closeNodeRedisClient(client);
    } else {
      const client = new Redis(server.url);
      backend = new RedisLockBackend({ client, ...options });
      closeClient = () => client.quit();
    }
    const locks = new LockService(backend, { keyPrefix: ns });
    opened.push({ locks, closeClient });
    return locks;
  }

  const queueLength = (key: string) => admin.llen(redisLockKeys(ns, key).queue);

  /**
   * Starts `acquire` and resolves once its entry is in the queue (the queue then has `position + 1` entries),
   * with the pending acquisition (wrapped: an async function would flatten a returned promise).
   */
  async function enqueue(
    locks: LockService,
    key: string,
    position: number,
    options: LockOptions = {},
  ): Promise<{ granted: Promise<LockHandle> }> {
    const granted = locks.acquire(key, { ttl: 10_000, waitTimeout: 60_000, ...options });
    granted.catch(() => undefined);
    await eventually(async () => (await queueLength(key)) === position + 1, 10_000);
    return { granted };
  }

  it('grants 30 queued waiters in exactly their arrival order', async () => {
    const held = await service().acquire('queue', { ttl: 30_000 });
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let index = 0; index < 30; index++) {
      const { granted: waiting } = await enqueue(service(), 'queue', index);
      waiters.push(
        waiting.then(async (lock) => {
          order.push(index);
          await lock.release();
        }),
      );
    }
    const releasedAt = performance.now();
    await held.release();
    await Promise.all(waiters);
    expect(order).toEqual(Array.from({ length: 30 }, (_, index) => index));
    // Each release wakes the next one directly (re-checks are 30 s apart here).
    expect(performance.now() - releasedAt).toBeLessThan(15_000);
    expect(await admin.exists(redisLockKeys(ns, 'queue').queue, redisLockKeys(ns, 'queue').queueExpiry)).toBe(0);
  });

  it('a SIGKILLed waiter in the middle of the queue holds up those behind it for at most the waiter ttl', async () => {
    const waiterTtl = 2_000;
    const held = await service({ waiterTtl }).acquire('queue', { ttl: 30_000 });
    const order: string[] = [];
    const track = (name: string, { granted }: { granted: Promise<LockHandle> }) =>
      granted.then(async (lock) => {
        order.push(name);
        await lock.release();
      });
    const first = track('first', await enqueue(service({ waiterTtl }), 'queue', 0));
    const second = track('second', await enqueue(service({ waiterTtl }), 'queue', 1));
    const doomed = forkKindsWorker({
      role: 'hold',
      redisUrl: server.url,
      fairness: 'fifo',
      waiterTtl,
      keyPrefix: ns,
      key: 'queue',
      ttl: 10_000,
    });
    await doomed.message('ready');
    await eventually(async () => (await queueLength('queue')) === 3, 10_000);
    const fourth = track('fourth', await enqueue(service({ waiterTtl }), 'queue', 3));
    const fifth = track('fifth', await enqueue(service({ waiterTtl }), 'queue', 4));

    await doomed.kill(); // no clean-up: its queue entry stays until it expires
    const releasedAt = performance.now();
    await held.release();
    await Promise.all([first, second, fourth, fifth]);
    expect(order).toEqual(['first', 'second', 'fourth', 'fifth']);
    expect(performance.now() - releasedAt).toBeLessThan(waiterTtl + MARGIN);
  });

  it('a waiter that times out leaves the queue at once, so the next one is woken by the release', async () => {
    // A waiter ttl far above the bounds below: only the timed-out waiter leaving can let the next one through.
    const held = await service({ waiterTtl: 60_000 }).acquire('queue', { ttl: 30_000 });
    const { granted: impatient } = await enqueue(service({ waiterTtl: 60_000 }), 'queue', 0, { waitTimeout: 1_000 });
    const { granted: patient } = await enqueue(service({ waiterTtl: 60_000 }), 'queue', 1);
    await expect(impatient).rejects.toBeInstanceOf(LockTimeoutError);
    await eventually(async () => (await queueLength('queue')) === 1);

    const releasedAt = performance.now();
    await held.release();
    const lock = await patient;
    expect(performance.now() - releasedAt).toBeLessThan(MARGIN);
    await lock.release();
  });

  it('queues readers behind a waiting writer, then lets them in together after it', async () => {
    const firstReader = await service().acquire('doc', { mode: 'read', ttl: 30_000 });
    const events: string[] = [];
    const writer = (await enqueue(service(), 'doc', 0, { mode: 'write' })).granted.then(
      (lock) => (events.push('writer'), lock),
    );
    const late = service();
    expect(await late.tryAcquire('doc', { mode: 'read' })).toBeNull(); // never overtakes the queue
    const readers = [
      await enqueue(late, 'doc', 1, { mode: 'read' }),
      await enqueue(service(), 'doc', 2, { mode: 'read' }),
    ].map(({ granted }) => granted.then((lock) => (events.push('reader'), lock)));

    await firstReader.release();
    const writerLock = await writer;
    expect(events).toEqual(['writer']);
    await writerLock.release();
    const readerLocks = await Promise.all(readers);
    expect(events).toEqual(['writer', 'reader', 'reader']);
    // Both hold at once.
    expect(readerLocks.every((lock) => lock.isHeld)).toBe(true);
    expect(await admin.zcard(redisLockKeys(ns, 'doc').readers)).toBe(2);
    await Promise.all(readerLocks.map((lock) => lock.release()));
  });

  it('grants semaphore permits in arrival order', async () => {
    const holders = service();
    const held = await Promise.all([1, 2].map(() => holders.acquire('pool', { permits: 2, ttl: 30_000 })));
    const order: number[] = [];
    const waiters: Promise<LockHandle>[] = [];
    for (let index = 0; index < 5; index++) {
      const waiting = service().acquire('pool', { permits: 2, ttl: 10_000, waitTimeout: 60_000 });
      await eventually(async () => (await admin.llen(redisSemaphoreKeys(ns, 'pool').queue)) === index + 1);
      waiters.push(waiting.then((lock) => (order.push(index), lock)));
    }
    // One permit at a time: each release lets exactly the next waiter in.
    let previous = held[0];
    await held[1].release();
    for (let index = 0; index < 5; index++) {
      const lock = await waiters[index];
      await previous.release();
      previous = lock;
    }
    await previous.release();
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });
});
