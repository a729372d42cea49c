import Redis from 'ioredis';
import { encodeKeyPart, redisLockKeys, redisSemaphoreKeys } from '../../lib/backends/redis/redis-keys';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { held, lockRequest, NAMESPACE } from './redis-spec-helpers';

const TRICKY_KEYS = [
  'a',
  '{a}',
  'a}:fence',
  'a}:released',
  'a}:readers',
  'a}:semaphore',
  'a:semaphore',
  'user/1',
  'user',
  'x{y}z',
  '%7B',
  '%',
  'line\nbreak',
  'ключ',
];

/** The part of a key Redis Cluster hashes: between the first `{` and the next `}`. */
function hashTag(name: string): string {
  const open = name.indexOf('{');
  const close = name.indexOf('}', open + 1);
  return name.slice(open + 1, close);
}

describe('Redis key layout', () => {
  /** Every Redis name one user key uses: lock, readers, queues, channels, counter, semaphore. */
  function namesOf(key: string): string[] {
    const { tag: _lockTag, ...lock } = redisLockKeys('locks', key);
    const { tag: _semaphoreTag, fence: _sameFence, ...semaphore } = redisSemaphoreKeys('locks', key);
    return [...Object.values(lock), ...Object.values(semaphore)];
  }

  it('keeps every key and channel of one lock name (all kinds) in one hash tag, whatever the key contains', () => {
    for (const key of TRICKY_KEYS) {
      for (const name of namesOf(key)) expect(hashTag(name)).toBe(encodeKeyPart(key));
      expect(redisLockKeys('locks', key).tag).toBe(encodeKeyPart(key));
      expect(redisSemaphoreKeys('locks', key).fence).toBe(redisLockKeys('locks', key).fence);
      expect(encodeKeyPart(key)).not.toMatch(/[{}]/);
    }
  });

  it('gives distinct keys distinct names, so no key can land on another key’s counter or channel', () => {
    const names = TRICKY_KEYS.flatMap(namesOf);
    expect(new Set(names).size).toBe(names.length);
    expect(redisLockKeys('locks', 'a}:fence').lock).not.toBe(redisLockKeys('locks', 'a').fence);
    expect(redisLockKeys('locks', 'a').lock).toBe('locks:{a}');
    expect(redisLockKeys('locks', 'a').fence).toBe('locks:{a}:fence');
    expect(redisLockKeys('locks', 'a').channel).toBe('locks:{a}:released');
  });

  it('percent-encodes only %, braces and control characters', () => {
    expect(encodeKeyPart('%{}\n\u007f\u0085é/: *?[]')).toBe('%25%7B%7D%0A%7F%C2%85é/: *?[]');
  });

  describe('on a server', () => {
    let server: TestRedisServer;
    let client: Redis;
    let backend: RedisLockBackend;

    beforeAll(async () => {
      server = await startRedis();
      client = new Redis(server.url);
      backend = new RedisLockBackend({ client });
    });

    afterAll(async () => {
      await backend?.close();
      await client?.quit();
      await server?.stop();
    });

    it('locks a, {a}, a}:fence and user/1 independently', async () => {
      const keys = ['a', '{a}', 'a}:fence', 'user/1'];
      const requests = keys.map((key) => lockRequest(key));
      const grants = await Promise.all(requests.map((request) => backend.tryAcquire(request)));
      expect(grants.every((grant) => grant !== null)).toBe(true);
      // Each key is busy now, and only under its own names.
      for (const key of keys) {
        expect(await backend.tryAcquire(lockRequest(key))).toBeNull();
        const names = redisLockKeys(NAMESPACE, key);
        expect(await client.exists(names.lock, names.fence)).toBe(2);
      }
      expect(await client.dbsize()).toBe(keys.length * 2);

      await backend.release(held(requests[0], grants[0]!));
      expect(await backend.isLocked(NAMESPACE, 'a')).toBe(false);
      for (const key of keys.slice(1)) expect(await backend.isLocked(NAMESPACE, key)).toBe(true);
    });
  });
});
