import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';
import { redisLockKeys } from '../../lib/backends/redis/redis-keys';
import { RedisLockBackend, type RedisLockBackendTuning } from '../../lib/backends/redis/redis-lock.backend';
import { LockService } from '../../lib/lock.service';
import { uniqueNamespace } from '../support/backends';
import { killAllWorkers } from '../support/worker';
import { forkKindsWorker } from './kinds-workers';
import type { KindsSection } from './kinds-worker-protocol';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { eventually, held, lockRequest } from './redis-spec-helpers';

/** Far below every ttl and waiter ttl these tests use: only a handoff can explain a grant within it. */
const PROMPT_MS = 2_000;

/**
 * Grant on release (fairness 'fifo', the default): the release script makes the queue's head the holder and
 * publishes one grant message to that waiter's process.
 */
describe('Redis handoff (grant on release)', () => {
  let server: TestRedisServer;
  let admin: Redis;
  let ns: string;
  const opened: { close(): Promise<unknown> }[] = [];

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
  });

  afterAll(async () => {
    await admin?.quit();
    await server?.stop();
  });

  beforeEach(() => {
    ns = uniqueNamespace('handoff');
  });

  afterEach(async () => {
    await killAllWorkers();
    await Promise.all(opened.splice(0).map((resource) => resource.close()));
  });

  function backend(tuning: RedisLockBackendTuning = {}): RedisLockBackend {
    const client = new Redis(server.url);
    const created = new RedisLockBackend({ client, ...tuning });
    opened.push({ close: async () => (await created.close(), await client.quit()) });
    return created;
  }

  function service(tuning: RedisLockBackendTuning = {}): LockService {
    const locks = new LockService(backend(tuning), { keyPrefix: ns });
    opened.push(locks);
    return locks;
  }

  const queueLength = (key: string) => admin.llen(redisLockKeys(ns, key).queue);

  it('is the default, and hands the lock over across processes in arrival order with rising fencing tokens', async () => {
    expect(backend().fairness).toBe('fifo');
    const holder = service();
    const first = await holder.acquire('order', { ttl: 30_000 });
    const workers = [];
    for (let index = 0; index < 4; index++) {
      const worker = forkKindsWorker({
        role: 'turn',
        redisUrl: server.url,
        keyPrefix: ns,
        key: 'order',
        ttl: 30_000,
        holdMs: 20,
      });
      await worker.message('ready');
      worker.send({ type: 'go' });
      // Queued in this order: each one joins only after the one before it.
      await eventually(async () => (await queueLength('order')) === index + 1, 10_000);
      workers.push(worker);
    }
    const releasedAt = performance.now();
    await first.release();
    const sections: { worker: number; section: KindsSection }[] = [];
    await Promise.all(
      workers.map(async (worker, index) => {
        const [done] = await Promise.all([worker.message('done'), worker.message('held')]);
        sections.push(...done.sections.map((section) => ({ worker: index, section })));
      }),
    );
    // 4 holds of 20 ms: the handoffs themselves add little.
    expect(performance.now() - releasedAt).toBeLessThan(PROMPT_MS);
    sections.sort((a, b) => Number(BigInt(a.section.start) - BigInt(b.section.start)));
    expect(sections.map(({ worker }) => worker)).toEqual([0, 1, 2, 3]);
    let fence = first.fencingToken;
    let end = 0n;
    for (const { section } of sections) {
      expect(BigInt(section.fencingToken)).toBeGreaterThan(fence);
      expect(BigInt(section.start)).toBeGreaterThanOrEqual(end); // never two holders
      fence = BigInt(section.fencingToken);
      end = BigInt(section.end);
    }
    expect(await queueLength('order')).toBe(0);
  }, 60_000);

  it('costs one message per handoff, on the waiter’s grant channel, and none when nobody waits', async () => {
    const locks = backend({ recheckInterval: 60_000 });
    const subscriber = new Redis(server.url);
    const messages: string[] = [];
    subscriber.on('message', (channel: string) => messages.push(channel));
    subscriber.on('pmessage', (_pattern: string, channel: string) => messages.push(channel));
    const keyChannel = redisLockKeys(ns, 'published').channel;
    await subscriber.subscribe(keyChannel);
    await subscriber.psubscribe(`${ns}:handoff:*`);

    const alone = lockRequest('published', 10_000, ns);
    await locks.release(held(alone, (await locks.tryAcquire(alone))!));
    const holder = lockRequest('published', 10_000, ns);
    const holderGrant = (await locks.tryAcquire(holder))!;
    const waiter = lockRequest('published', 10_000, ns);
    const waiting = locks.acquire(waiter, new AbortController().signal);
    await eventually(async () => (await queueLength('published')) === 1);
    await locks.release(held(holder, holderGrant));
    const waiterGrant = await waiting;
    expect(waiterGrant.fencingToken).toBeGreaterThan(holderGrant.fencingToken);
    // Handed over: nobody waits behind it, so its release publishes nothing.
    await locks.release(held(waiter, waiterGrant));
    await subscriber.ping(); // its reply comes after every message published before it
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(new RegExp(`^${ns}:handoff:[0-9a-f]+$`));
    await subscriber.quit();
  });

  it('a waiter that gives up as it is granted leaves no held lock: the next waiter gets it', async () => {
    const locks = backend({ recheckInterval: 60_000 });
    const holder = lockRequest('abort', 30_000, ns);
    const holderGrant = (await locks.tryAcquire(holder))!;
    const impatient = lockRequest('abort', 30_000, ns);
    const giveUp = new AbortController();
    const impatientWait = locks.acquire(impatient, giveUp.signal);
    await eventually(async () => (await queueLength('abort')) === 1);
    const patient = lockRequest('abort', 30_000, ns);
    const patientWait = locks.acquire(patient, new AbortController().signal);
    await eventually(async () => (await queueLength('abort')) === 2);

    // The release grants `impatient` on the server while it is already giving up here.
    const releasing = locks.release(held(holder, holderGrant));
    giveUp.abort(new Error('gave up'));
    await releasing;
    await expect(impatientWait).rejects.toThrow('gave up');
    const startedAt = performance.now();
    const grant = await patientWait;
    expect(performance.now() - startedAt).toBeLessThan(PROMPT_MS);
    expect((await admin.get(redisLockKeys(ns, 'abort').lock))?.startsWith(patient.token)).toBe(true);
    await locks.release(held(patient, grant));
    expect(await admin.exists(redisLockKeys(ns, 'abort').lock)).toBe(0);
  });

  it('a SIGKILLed waiter at the head does not hold up the next one: its grant reaches nobody', async () => {
    // Waiter ttl and lock ttl far above PROMPT_MS: only the unheard grant can let the next one in that soon.
    const holding = await service({ waiterTtl: 60_000 }).acquire('dead', { ttl: 30_000 });
    const doomed = forkKindsWorker({
      role: 'hold',
      redisUrl: server.url,
      waiterTtl: 60_000,
      keyPrefix: ns,
      key: 'dead',
      ttl: 30_000,
    });
    await doomed.message('ready');
    await eventually(async () => (await queueLength('dead')) === 1, 10_000);
    const next = service({ waiterTtl: 60_000 }).acquire('dead', { ttl: 30_000 });
    const grantChannels = async () => ((await admin.pubsub('CHANNELS', `${ns}:handoff:*`)) as string[]).length;
    await eventually(async () => (await queueLength('dead')) === 2);
    expect(await grantChannels()).toBe(2);
    await doomed.kill(); // no clean-up: its entry stays queued, at the head
    // The server has seen its subscriber connection close once only our grant channel is left.
    await eventually(async () => (await grantChannels()) === 1, 10_000);
    const releasedAt = performance.now();
    await holding.release();
    const lock = await next;
    expect(performance.now() - releasedAt).toBeLessThan(PROMPT_MS);
    expect(lock.fencingToken).toBeGreaterThan(holding.fencingToken);
    await lock.release();
  }, 30_000);

  it('a waiter whose grant message was lost finds the lock its own at its next re-check', async () => {
    const locks = backend({ recheckInterval: 300 });
    const holder = lockRequest('lost', 30_000, ns);
    const holderGrant = (await locks.tryAcquire(holder))!;
    const waiter = lockRequest('lost', 5_000, ns);
    const waiting = locks.acquire(waiter, new AbortController().signal);
    await eventually(async () => (await queueLength('lost')) === 1);
    const keys = redisLockKeys(ns, 'lost');
    // What a release does, without its message: the waiter leaves the queue as the holder.
    await admin.multi().del(keys.queue, keys.queueExpiry).set(keys.lock, waiter.token, 'PX', 1_000).exec();
    const startedAt = performance.now();
    const grant = await waiting;
    expect(performance.now() - startedAt).toBeLessThan(PROMPT_MS);
    expect(grant.fencingToken).toBeGreaterThan(holderGrant.fencingToken);
    // Re-granted with its own ttl, from that attempt on.
    expect(await admin.pttl(keys.lock)).toBeGreaterThan(2_000);
    expect(await locks.release(held(waiter, grant))).toBe(true);
  });
});
