import Redis from 'ioredis';
import { redisLockKeys } from '../../lib/backends/redis/redis-keys';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { held, lockRequest, NAMESPACE } from './redis-spec-helpers';

describe('Redis fencing tokens', () => {
  let server: TestRedisServer;
  let client: Redis;
  let backend: RedisLockBackend;

  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.url);
    client.on('error', () => undefined); // the restart test drops the connection on purpose
    backend = new RedisLockBackend({ client });
  });

  afterAll(async () => {
    await backend?.close();
    await client?.quit();
    await server?.stop();
  });

  async function takeAndRelease(key: string): Promise<bigint> {
    const request = lockRequest(key);
    const grant = await backend.tryAcquire(request);
    expect(grant).not.toBeNull();
    expect(await backend.release(held(request, grant!))).toBe(true);
    return grant!.fencingToken;
  }

  it('strictly increase per key, across holders', async () => {
    const tokens: bigint[] = [];
    for (let i = 0; i < 30; i++) tokens.push(await takeAndRelease('increasing'));
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
  });

  it('start at the server clock in microseconds and are kept in a counter for the ttl plus the retention', async () => {
    const [seconds, micros] = await client.time();
    const before = BigInt(seconds) * 1_000_000n + BigInt(micros);
    const token = await takeAndRelease('clocked');
    expect(token).toBeGreaterThanOrEqual(before);
    const fence = redisLockKeys(NAMESPACE, 'clocked').fence;
    expect(await client.get(fence)).toBe(token.toString());
    const pttl = await client.pttl(fence);
    expect(pttl).toBeGreaterThan(50_000); // lockRequest's 10 s ttl + the default 60 s retention
    expect(pttl).toBeLessThanOrEqual(70_000);
  });

  it('keep increasing after FLUSHALL wiped the counter (a restart without persistence)', async () => {
    let last = 0n;
    for (let i = 0; i < 5; i++) last = await takeAndRelease('flushed');
    await client.flushall();
    const after = await takeAndRelease('flushed');
    expect(after).toBeGreaterThan(last);
  });

  it('keep increasing after the counter went back (an older snapshot restored, a failover to a lagging replica)', async () => {
    const fence = redisLockKeys(NAMESPACE, 'rolled-back').fence;
    await takeAndRelease('rolled-back');
    await client.set(fence, '5'); // what the server had before the tokens below were handed out
    let last = 0n;
    for (let i = 0; i < 5; i++) last = await takeAndRelease('rolled-back');
    await client.set(fence, '6');
    expect(await takeAndRelease('rolled-back')).toBeGreaterThan(last);
  });

  it('count on from a counter that is ahead of the server clock (raised by Redlock from a faster clock)', async () => {
    const fence = redisLockKeys(NAMESPACE, 'ahead').fence;
    const [seconds] = await client.time();
    const ahead = (BigInt(seconds) + 3_600n) * 1_000_000n;
    await client.set(fence, ahead.toString());
    expect(await takeAndRelease('ahead')).toBe(ahead + 1n);
    expect(await takeAndRelease('ahead')).toBe(ahead + 2n);
    expect(await client.get(fence)).toBe((ahead + 2n).toString());
  });

  it("read the counter as a number when it is not plain digits of the clock's length (an edit by hand)", async () => {
    const fence = redisLockKeys(NAMESPACE, 'edited').fence;
    const [seconds] = await client.time();
    // As long as a token, smaller as text ('0' < '1'), an hour ahead as a number.
    const ahead = (BigInt(seconds) + 3_600n) * 1_000_000n;
    const edited = `${ahead / 1_000_000n}e6`.padStart(16, '0');
    expect(edited).toHaveLength((await takeAndRelease('edited')).toString().length);
    await client.set(fence, edited);
    expect(await takeAndRelease('edited')).toBe(ahead + 1n);
  });

  it('keep increasing after a real server restart without persistence', async () => {
    const before = await takeAndRelease('restarted');
    await server.restart();
    expect(await client.dbsize()).toBe(0); // ioredis reconnected to an empty server
    const after = await takeAndRelease('restarted');
    expect(after).toBeGreaterThan(before);
  });
});
