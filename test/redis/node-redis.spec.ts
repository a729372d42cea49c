import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';
import { LockBackendError } from '../../lib/errors/lock-backend.error';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { normaliseReply } from '../../lib/backends/redis/port/redis-port';
import { redisPortOf } from '../../lib/backends/redis/port/redis-port-of';
import { LockService } from '../../lib/lock.service';
import { closeNodeRedisClient, createNodeRedisClient, type NodeRedisClient } from '../support/backends';
import { freeTestPort } from '../support/free-port';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { sleep } from '../support/time';
import { publishAfterResubscribe } from './resubscribe-race';
import { deadline, lockRequest, NAMESPACE } from './redis-spec-helpers';

/**
 * What the shared suites (contract, kinds: run over node-redis RESP2 and RESP3 in test/contract and test/kinds)
 * do not show: node-redis against a dead server, credentials kept out of messages, the client the backend
 * creates with `clientPackage: 'redis'`, NOSCRIPT after SCRIPT FLUSH, and RESP3 replies of inspect().
 */
const OPERATION_TIMEOUT = 500;
/** Slack for a loaded machine; a hang would blow far past it. */
const MARGIN = 3_000;

describe('Redis backend over a node-redis client', () => {
  let server: TestRedisServer;
  let admin: Redis;
  const clients: NodeRedisClient[] = [];

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
  });

  afterAll(async () => {
    await admin?.quit();
    await server?.stop();
  });

  afterEach(async () => {
    await Promise.all(clients.splice(0).map(closeNodeRedisClient));
  });

  function nodeClient(url: string, resp: 2 | 3): NodeRedisClient {
    const client = createNodeRedisClient(url, resp);
    clients.push(client);
    return client;
  }

  describe.each([2, 3] as const)('RESP%s', (resp) => {
    it('fails every operation against a dead server with a LockBackendError naming the address within operationTimeout, without the password', async () => {
      const port = await freeTestPort();
      const client = nodeClient(`redis://lockuser:s3cret-pass@127.0.0.1:${port}`, resp);
      const locks = new LockService(new RedisLockBackend({ client }), {
        keyPrefix: NAMESPACE,
        operationTimeout: OPERATION_TIMEOUT,
      });
      try {
        const checks: [string, () => Promise<unknown>, number][] = [
          ['tryAcquire', () => locks.tryAcquire('down', { ttl: 10_000 }), OPERATION_TIMEOUT],
          ['acquire', () => locks.acquire('down', { ttl: 10_000, waitTimeout: 1_000 }), 1_000],
          ['isLocked', () => locks.isLocked('down'), OPERATION_TIMEOUT],
        ];
        for (const [operation, call, bound] of checks) {
          const startedAt = performance.now();
          const error = await call().then(
            () => new Error(`${operation} succeeded against a dead port`),
            (rejection: unknown) => rejection,
          );
          expect({ operation, error }).toEqual({ operation, error: expect.any(LockBackendError) });
          expect(error).toMatchObject({ backend: 'redis', address: `127.0.0.1:${port}` });
          expect((error as Error).message).toContain(`127.0.0.1:${port}`);
          expect((error as Error).message).not.toContain('s3cret-pass');
          expect(performance.now() - startedAt).toBeLessThan(bound + MARGIN);
        }
      } finally {
        await locks.close();
      }
    });

    it('runs the scripts again after SCRIPT FLUSH (EVALSHA answered NOSCRIPT, then EVAL once)', async () => {
      const backend = new RedisLockBackend({ client: nodeClient(server.url, resp) });
      try {
        const first = await backend.tryAcquire(lockRequest(`flush-a-${resp}`));
        expect(first).not.toBeNull();
        await admin.script('FLUSH');
        const request = lockRequest(`flush-b-${resp}`);
        const second = await backend.tryAcquire(request);
        expect(second?.fencingToken).toEqual(expect.any(BigInt));
        const held = { ...request, fencingToken: second!.fencingToken };
        // Renewals go as a batch (extendMany): their NOSCRIPT path differs from a single call's.
        await admin.script('FLUSH');
        expect(await backend.extendMany([{ lock: held, ttl: 5_000 }])).toEqual([expect.any(Number)]);
        expect(await backend.release(held)).toBe(true);
        expect(await backend.isLocked(NAMESPACE, `flush-b-${resp}`)).toBe(false);
      } finally {
        await backend.close();
      }
    });

    it('hears a release on a channel subscribed again while its UNSUBSCRIBE is still unanswered', async () => {
      const port = redisPortOf(nodeClient(server.url, resp), 'test');
      const heard = await publishAfterResubscribe(port, `resubscribe-${resp}`, (channel, message) =>
        admin.publish(channel, message),
      );
      expect(heard).toBe('release');
    });

    it('inspect() lists readers with their expiries (RESP3 answers ZRANGE WITHSCORES as pairs)', async () => {
      const backend = new RedisLockBackend({ client: nodeClient(server.url, resp) });
      try {
        const key = `inspect-${resp}`;
        const readerA = { ...lockRequest(key), mode: 'read' as const, holder: 'host-a' };
        const readerB = { ...lockRequest(key), mode: 'read' as const, holder: 'host-b' };
        expect(await backend.tryAcquire(readerA)).not.toBeNull();
        expect(await backend.tryAcquire(readerB)).not.toBeNull();
        const inspection = await backend.inspect(NAMESPACE, key);
        expect(inspection.holders.map((holder) => holder.holder).sort()).toEqual(['host-a', 'host-b']);
        for (const holder of inspection.holders) {
          expect(holder.mode).toBe('read');
          expect(holder.expiresAt).toBeGreaterThan(Date.now());
          expect(holder.expiresAt).toBeLessThan(Date.now() + 11_000);
        }
      } finally {
        await backend.close();
      }
    });
  });

  it("creates, uses and closes its own node-redis client with { url, clientPackage: 'redis' }", async () => {
    const backend = new RedisLockBackend({ url: server.url, clientPackage: 'redis', redisOptions: { RESP: 3 } });
    const request = lockRequest('owned');
    const wait = deadline(5_000);
    try {
      const grant = await backend.acquire(request, wait.signal);
      expect(await backend.isLocked(NAMESPACE, 'owned')).toBe(true);
      expect(await backend.release({ ...request, fencingToken: grant.fencingToken })).toBe(true);
    } finally {
      wait.dispose();
      await backend.close();
    }
    // Its connections are gone: only the admin connection is left.
    const list = await admin.client('LIST');
    expect(String(list).trim().split('\n')).toHaveLength(1);
  });

  it('closed while its own node-redis client is still connecting, leaves no connection behind', async () => {
    // node-redis' destroy() during a connect leaves the socket being opened connected for good (the process
    // then never exits), so close() lets the attempt end first. Several at once: a late connection shows.
    const backends = Array.from({ length: 5 }, () => new RedisLockBackend({ url: server.url, clientPackage: 'redis' }));
    await Promise.all(backends.map((backend) => backend.close()));
    // A connection left behind would have been established long before this (loopback, no queue to drain).
    await sleep(500);
    const list = await admin.client('LIST');
    expect(String(list).trim().split('\n')).toHaveLength(1);
  });

  it('never takes a lock through its own client when the password is wrong, even where the default user is open', async () => {
    // node-redis sends commands queued during connect() right after a failed AUTH, as the default user.
    await admin.call('ACL', 'SETUSER', 'app', 'reset', 'on', '>right-pass', '~*', '&*', '+@all');
    const locks = new LockService(
      new RedisLockBackend({ url: server.url.replace('redis://', 'redis://app:wrong-pass@'), clientPackage: 'redis' }),
      { keyPrefix: NAMESPACE, operationTimeout: OPERATION_TIMEOUT },
    );
    try {
      const error = await locks.tryAcquire('wrong-pass').then(
        (handle) => new Error(`granted with a wrong password (token ${handle?.fencingToken})`),
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(LockBackendError);
      expect((error as Error).message).toMatch(/WRONGPASS/);
      expect((error as Error).message).toMatch(/check the user, its password and its permissions \(ACL\)/);
      expect((error as Error).message).not.toContain('wrong-pass');
      expect(await admin.exists(`${NAMESPACE}:{wrong-pass}`)).toBe(0);
    } finally {
      await locks.close();
      await admin.call('ACL', 'DELUSER', 'app');
    }
  });

  it('says the connection is reconnecting, not connecting, when a connected client lost its server', async () => {
    const own = await startRedis();
    const client = createNodeRedisClient(own.url, 2);
    const locks = new LockService(new RedisLockBackend({ client }), {
      keyPrefix: NAMESPACE,
      operationTimeout: OPERATION_TIMEOUT,
    });
    try {
      await (await locks.acquire('before-outage')).release();
      await own.kill('SIGKILL');
      const error = await locks.tryAcquire('during-outage').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(LockBackendError);
      expect((error as Error).message).toContain('connection reconnecting');
    } finally {
      await locks.close();
      await closeNodeRedisClient(client);
      await own.stop();
    }
  });

  it('tells the app to connect a client it passed in without connecting it', async () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { createClient } = require('redis') as typeof import('redis');
    const client = createClient({ url: server.url });
    const locks = new LockService(new RedisLockBackend({ client }), {
      keyPrefix: NAMESPACE,
      operationTimeout: OPERATION_TIMEOUT,
    });
    try {
      const error = await locks.tryAcquire('unconnected').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(LockBackendError);
      expect((error as Error).message).toContain('call `await client.connect()` before passing it');
    } finally {
      await locks.close();
    }
  });

  it("fails a dead server's acquire from its own client ({ url }) with the connection error, never the password", async () => {
    const port = await freeTestPort();
    const backend = new RedisLockBackend({ url: `redis://u:hunter2-secret@127.0.0.1:${port}`, clientPackage: 'redis' });
    const wait = deadline(OPERATION_TIMEOUT);
    try {
      const error = await backend.acquire(lockRequest('down'), wait.signal).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(LockBackendError);
      expect((error as Error).message).toContain(`127.0.0.1:${port}`);
      expect((error as Error).message).not.toContain('hunter2-secret');
    } finally {
      wait.dispose();
      await backend.close();
    }
  });
});

describe('normaliseReply', () => {
  it('gives RESP3 script replies the RESP2 values the algorithm compares with', () => {
    expect(normaliseReply(true)).toBe(1);
    expect(normaliseReply(false)).toBeNull();
    expect(normaliseReply([1, '42'])).toEqual([1, '42']);
    expect(normaliseReply([true, [false, Buffer.from('x')]])).toEqual([1, [null, 'x']]);
    const plain = [0, 150];
    expect(normaliseReply(plain)).toBe(plain);
  });
});
