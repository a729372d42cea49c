import Redis from 'ioredis';
import { LockBackendError } from '../../lib/errors/lock-backend.error';
import { redisLockKeys } from '../../lib/backends/redis/redis-keys';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { IoRedisPort } from '../../lib/backends/redis/port/ioredis-port';
import { sleep } from '../support/time';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { deadline, eventually, held, lockRequest, NAMESPACE } from './redis-spec-helpers';

const SUBSCRIBER_NAME = 'nest-distributed-lock:subscriber';

describe('Redis waiters', () => {
  let server: TestRedisServer;
  let client: Redis;
  let admin: Redis;
  /** Re-checks only every 30 s: anything faster than that was woken by a release message. */
  let backend: RedisLockBackend;

  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.url);
    admin = new Redis(server.url);
    backend = new RedisLockBackend({ client, recheckInterval: 30_000 });
  });

  afterAll(async () => {
    await backend?.close();
    await Promise.all([client?.quit(), admin?.quit()]);
    await server?.stop();
  });

  async function subscribers(key: string, namespace = NAMESPACE): Promise<number> {
    const channel = redisLockKeys(namespace, key).channel;
    const reply = (await admin.pubsub('NUMSUB', channel)) as [string, number];
    return Number(reply[1]);
  }

  async function clients(): Promise<{ total: number; subscribers: number }> {
    const lines = ((await admin.client('LIST')) as string).trim().split('\n');
    return {
      total: lines.length,
      subscribers: lines.filter((line) => line.includes(` name=${SUBSCRIBER_NAME} `)).length,
    };
  }

  it('is woken by the release, long before the holder’s lock would expire', async () => {
    const holder = lockRequest('woken', 20_000);
    const holderGrant = await backend.tryAcquire(holder);
    const wait = deadline(15_000);
    const waiter = lockRequest('woken', 5_000);
    const granted = backend.acquire(waiter, wait.signal);
    await eventually(async () => (await subscribers('woken')) === 1);

    const releasedAt = performance.now();
    await backend.release(held(holder, holderGrant!));
    const grant = await granted;
    expect(performance.now() - releasedAt).toBeLessThan(5_000);
    expect(grant.fencingToken).toBeGreaterThan(holderGrant!.fencingToken);
    wait.dispose();
    await backend.release(held(waiter, grant));
    await eventually(async () => (await subscribers('woken')) === 0);
  });

  it('takes the lock when the holder’s lock expires, without any release', async () => {
    await backend.tryAcquire(lockRequest('expiring', 500));
    const wait = deadline(15_000);
    const waiter = lockRequest('expiring');
    const startedAt = performance.now();
    const grant = await backend.acquire(waiter, wait.signal);
    expect(performance.now() - startedAt).toBeLessThan(5_000);
    wait.dispose();
    await backend.release(held(waiter, grant));
  });

  it('does not hang when the release message is lost', async () => {
    const rechecking = new RedisLockBackend({ client, recheckInterval: 200 });
    await rechecking.tryAcquire(lockRequest('lost-message', 20_000));
    const wait = deadline(15_000);
    const waiter = lockRequest('lost-message');
    const granted = rechecking.acquire(waiter, wait.signal);
    await eventually(async () => (await subscribers('lost-message')) === 1);
    // Deleted behind the backend's back: no PUBLISH, as when a message is lost during a reconnect.
    const deletedAt = performance.now();
    await admin.del(redisLockKeys(NAMESPACE, 'lost-message').lock);
    const grant = await granted;
    expect(performance.now() - deletedAt).toBeLessThan(5_000);
    wait.dispose();
    await rechecking.release(held(waiter, grant));
    await rechecking.close();
  });

  it('shares one subscriber connection between 50 waiters on 5 keys and leaves no channel behind', async () => {
    const own = new RedisLockBackend({ client, recheckInterval: 30_000 });
    const namespace = 'shared-subscriber';
    const keys = ['k0', 'k1', 'k2', 'k3', 'k4'];
    const base = await clients();

    const holders = await Promise.all(
      keys.map(async (key) => {
        const request = lockRequest(key, 20_000, namespace);
        return held(request, (await own.tryAcquire(request))!);
      }),
    );
    const inside = new Map<string, number>();
    const tokens = new Map<string, bigint[]>();
    const waiters = Array.from({ length: 50 }, async (_, index) => {
      const key = keys[index % keys.length];
      const request = lockRequest(key, 10_000, namespace);
      const wait = deadline(30_000);
      const grant = await own.acquire(request, wait.signal).finally(() => wait.dispose());
      // Mutual exclusion: nobody else holds this key between our grant and our release.
      inside.set(key, (inside.get(key) ?? 0) + 1);
      expect(inside.get(key)).toBe(1);
      tokens.set(key, [...(tokens.get(key) ?? []), grant.fencingToken]);
      await new Promise((resolve) => setImmediate(resolve));
      inside.set(key, inside.get(key)! - 1);
      expect(await own.release(held(request, grant))).toBe(true);
    });

    for (const key of keys) await eventually(async () => (await subscribers(key, namespace)) === 1);
    expect(await clients()).toEqual({ total: base.total + 1, subscribers: base.subscribers + 1 });

    await Promise.all(holders.map((lock) => own.release(lock)));
    await Promise.all(waiters);

    for (const key of keys) {
      const issued = tokens.get(key)!;
      expect(issued).toHaveLength(10);
      for (let i = 1; i < issued.length; i++) expect(issued[i]).toBeGreaterThan(issued[i - 1]);
    }
    await eventually(async () => ((await admin.pubsub('CHANNELS', `${namespace}:*`)) as string[]).length === 0);
    expect((await clients()).total).toBe(base.total + 1);

    await own.close();
    await eventually(async () => (await clients()).total === base.total);
  });

  it('leaves the channel when its wait is aborted, rejecting with the signal’s reason', async () => {
    await backend.tryAcquire(lockRequest('aborted', 20_000));
    const wait = deadline(300);
    await expect(backend.acquire(lockRequest('aborted'), wait.signal)).rejects.toBe(wait.reason);
    await eventually(async () => (await subscribers('aborted')) === 0);
  });

  it('rejects at once, without a server call, when the signal is already aborted', async () => {
    const controller = new AbortController();
    const reason = new Error('already late');
    controller.abort(reason);
    await expect(backend.acquire(lockRequest('pre-aborted'), controller.signal)).rejects.toBe(reason);
    expect(await backend.isLocked(NAMESPACE, 'pre-aborted')).toBe(false);
  });

  it('never grants after an abort that came while the server had not answered', async () => {
    // Writes (and our scripts) wait while the server is paused, reads still answer.
    await admin.client('PAUSE', 1_000, 'WRITE');
    const wait = deadline(200);
    const error = await backend.acquire(lockRequest('paused'), wait.signal).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LockBackendError);
    expect((error as LockBackendError).operation).toBe('acquire');
    expect((error as Error).message).toContain(backend.address);

    // After the pause the script runs and grants (the counter moves); the backend releases that grant.
    const fence = redisLockKeys(NAMESPACE, 'paused').fence;
    await eventually(async () => (await admin.exists(fence)) === 1);
    await eventually(async () => !(await backend.isLocked(NAMESPACE, 'paused')));
  });

  it('rejects waiting acquires with a LockBackendError when closed, and drops its subscriber', async () => {
    const base = await clients();
    const own = new RedisLockBackend({ client, recheckInterval: 30_000 });
    await own.tryAcquire(lockRequest('closing', 20_000));
    const wait = deadline(15_000);
    const waiting = own.acquire(lockRequest('closing'), wait.signal).catch((caught: unknown) => caught);
    await eventually(async () => (await subscribers('closing')) === 1);
    await own.close();
    const error = await waiting;
    wait.dispose();
    expect(error).toBeInstanceOf(LockBackendError);
    expect((error as Error).message).toMatch(/closed/);
    await eventually(async () => (await clients()).total === base.total && (await subscribers('closing')) === 0);
    expect(await client.ping()).toBe('PONG');
  });

  it('goes on by re-checking when its subscriber never confirms a SUBSCRIBE, and replaces that subscriber', async () => {
    // The subscriber's connection goes to a second server that is paused: as after a cluster node holding it died.
    const dead = await startRedis();
    const deadClient = new Redis(dead.url);
    await deadClient.ping();
    dead.pause();
    const own = new RedisLockBackend({ client, recheckInterval: 300 });
    const port = (own as unknown as { client: { duplicateForSubscriber(): unknown } }).client;
    const real = port.duplicateForSubscriber.bind(port);
    let duplicated = 0;
    port.duplicateForSubscriber = () =>
      ++duplicated === 1 ? new IoRedisPort(deadClient).duplicateForSubscriber() : real();
    try {
      const holder = lockRequest('unconfirmed', 20_000);
      const first = (await own.tryAcquire(holder))!;
      const wait = deadline(15_000);
      const waiter = lockRequest('unconfirmed');
      const granted = own.acquire(waiter, wait.signal);
      await sleep(600);
      const releasedAt = performance.now();
      await own.release(held(holder, first));
      const grant = await granted;
      wait.dispose();
      // Found by a re-check (every 300 ms here), long before the 15 s deadline.
      expect(performance.now() - releasedAt).toBeLessThan(5_000);
      await own.release(held(waiter, grant));
      // The next wait gets a subscriber of its own, which hears the release.
      const again = (await own.tryAcquire(holder))!;
      const nextWait = deadline(15_000);
      const next = own.acquire(lockRequest('unconfirmed'), nextWait.signal);
      await eventually(async () => (await subscribers('unconfirmed')) === 1);
      await own.release(held(holder, again));
      await next;
      nextWait.dispose();
      expect(duplicated).toBe(2);
    } finally {
      dead.resume();
      await own.close();
      deadClient.disconnect();
      await dead.stop();
    }
  });
});
