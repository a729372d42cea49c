import Redis from 'ioredis';
import { LockBackendError } from '../../lib/errors/lock-backend.error';
import { redisLockKeys } from '../../lib/backends/redis/redis-keys';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { driftAllowance } from '../../lib/utils/drift-allowance';
import { blockEventLoop } from '../support/time';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { eventually, held, lockRequest, NAMESPACE } from './redis-spec-helpers';

/** Client connections the server has, other than the one asking. */
async function clientCount(admin: Redis): Promise<number> {
  const list = (await admin.client('LIST')) as string;
  return list.trim().split('\n').length - 1;
}

describe('Redis lock ownership', () => {
  let server: TestRedisServer;
  let client: Redis;
  let admin: Redis;
  let backend: RedisLockBackend;

  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.url);
    admin = new Redis(server.url);
    backend = new RedisLockBackend({ client });
  });

  afterAll(async () => {
    await backend?.close();
    await Promise.all([client?.quit(), admin?.quit()]);
    await server?.stop();
  });

  it('reports validity from just before the winning request, minus the drift allowance', async () => {
    const request = lockRequest('validity', 10_000);
    const before = performance.now();
    const grant = await backend.tryAcquire(request);
    const after = performance.now();
    expect(grant!.validUntil).toBeGreaterThanOrEqual(before + 10_000 - driftAllowance(10_000));
    expect(grant!.validUntil).toBeLessThanOrEqual(after + 10_000 - driftAllowance(10_000));
    expect(await backend.tryAcquire(lockRequest('validity'))).toBeNull();
    await backend.release(held(request, grant!));
  });

  it('a grant whose reply is read after its validity is released and answers null, as docs/options.md says (it threw)', async () => {
    const request = lockRequest('read-too-late', 10);
    const trying = backend.tryAcquire(request);
    blockEventLoop(40); // the reply waits to be read past the 10 ms validity
    await expect(trying).resolves.toBeNull();
    await eventually(async () => (await admin.exists(redisLockKeys(NAMESPACE, 'read-too-late').lock)) === 0);
  });

  it('ignores extend and release with a wrong token', async () => {
    const request = lockRequest('wrong-token', 10_000);
    const grant = await backend.tryAcquire(request);
    const impostor = held({ ...request, token: 'not-the-owner' }, grant!);

    expect(await backend.extend(impostor, 60_000)).toBeNull();
    expect(await client.pttl(redisLockKeys(NAMESPACE, 'wrong-token').lock)).toBeLessThanOrEqual(10_000);
    expect(await backend.release(impostor)).toBe(false);
    expect(await backend.isLocked(NAMESPACE, 'wrong-token')).toBe(true);

    expect(await backend.release(held(request, grant!))).toBe(true);
    expect(await backend.release(held(request, grant!))).toBe(false);
    expect(await backend.isLocked(NAMESPACE, 'wrong-token')).toBe(false);
  });

  it('extends only its own lock and reports the new validity', async () => {
    const request = lockRequest('extend', 1_000);
    const grant = await backend.tryAcquire(request);
    const before = performance.now();
    const validUntil = await backend.extend(held(request, grant!), 20_000);
    const after = performance.now();
    expect(validUntil).toBeGreaterThanOrEqual(before + 20_000 - driftAllowance(20_000));
    expect(validUntil).toBeLessThanOrEqual(after + 20_000 - driftAllowance(20_000));
    expect(await client.pttl(redisLockKeys(NAMESPACE, 'extend').lock)).toBeGreaterThan(10_000);
    await backend.release(held(request, grant!));
    expect(await backend.extend(held(request, grant!), 20_000)).toBeNull();
  });

  it('never lets an expired holder touch the next holder’s lock', async () => {
    const first = lockRequest('expired', 50);
    const firstGrant = await backend.tryAcquire(first);
    const key = redisLockKeys(NAMESPACE, 'expired').lock;
    while ((await client.exists(key)) === 1) await new Promise((resolve) => setTimeout(resolve, 20));

    const second = lockRequest('expired', 10_000);
    const secondGrant = await backend.tryAcquire(second);
    expect(secondGrant!.fencingToken).toBeGreaterThan(firstGrant!.fencingToken);
    expect(await backend.extend(held(first, firstGrant!), 10_000)).toBeNull();
    expect(await backend.release(held(first, firstGrant!))).toBe(false);
    expect(await client.get(key)).toBe(second.token);
    await backend.release(held(second, secondGrant!));
  });

  it('without FIFO, publishes on the key’s channel when it releases a lock someone waits for (and only then)', async () => {
    // fairness 'none'; the default ('fifo') hands the lock over instead: redis-handoff.spec.ts.
    const racing = new RedisLockBackend({ client, fairness: 'none' });
    const subscriber = new Redis(server.url);
    const channel = redisLockKeys(NAMESPACE, 'published').channel;
    await subscriber.subscribe(channel);
    const messages: string[] = [];
    subscriber.on('message', (from: string) => messages.push(from));
    // Uncontended: nobody waits, nothing to publish.
    const alone = lockRequest('published');
    await racing.release(held(alone, (await racing.tryAcquire(alone))!));

    const request = lockRequest('published');
    const grant = await racing.tryAcquire(request);
    const waiter = lockRequest('published');
    const waiting = racing.acquire(waiter, new AbortController().signal);
    await eventually(async () => ((await client.get(redisLockKeys(NAMESPACE, 'published').lock)) ?? '').endsWith(' w'));
    await racing.release(held(request, grant!));
    await racing.release(held(waiter, await waiting));
    // Our PING's reply comes after every message published before it on this connection.
    await subscriber.ping();
    // The holder's release, and the waiter's (a grant to a waiter is marked: others may wait behind it);
    // none for the uncontended one.
    expect(messages).toEqual([channel, channel]);
    await racing.close();
    await subscriber.quit();
  });

  it('names host:port as its address, never the password', async () => {
    const withPassword = new RedisLockBackend({
      url: `redis://:secret-password@127.0.0.1:${server.port}`,
      redisOptions: { lazyConnect: true },
    });
    expect(withPassword.kind).toBe('redis');
    expect(withPassword.address).toBe(`127.0.0.1:${server.port}`);
    expect(backend.address).toBe(`127.0.0.1:${server.port}`);
    await withPassword.close();
  });

  it('refuses to be built without a connection', () => {
    expect(() => new RedisLockBackend({} as never)).toThrow(/needs a connection/);
  });

  it('leaves the app’s client open on close, and then refuses work', async () => {
    const appClient = new Redis(server.url);
    const own = new RedisLockBackend({ client: appClient });
    await own.tryAcquire(lockRequest('app-client'));
    await own.close();
    await own.close();
    expect(await appClient.ping()).toBe('PONG');
    await expect(own.tryAcquire(lockRequest('after-close'))).rejects.toBeInstanceOf(LockBackendError);
    await appClient.quit();
  });

  it('quits the client it created itself, idempotently', async () => {
    const base = await clientCount(admin);
    const own = new RedisLockBackend({ url: server.url });
    expect(await own.tryAcquire(lockRequest('own-client'))).not.toBeNull();
    expect(await clientCount(admin)).toBe(base + 1);
    const closing = own.close();
    expect(own.close()).toBe(closing);
    await closing;
    expect(await clientCount(admin)).toBe(base);
  });
});
