import Redis from 'ioredis';
import { ChannelSubscriber } from '../../lib/backends/redis/channel-subscriber';
import { IoRedisPort } from '../../lib/backends/redis/port/ioredis-port';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import type { LockGrant } from '../../lib/backends/lock-backend.interface';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { deadline, eventually, held, lockRequest } from './redis-spec-helpers';

/** EVALSHA calls the server executed (every acquire attempt and release is one). */
async function scriptCalls(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

/** Resolves with the next message `count` listeners took, in the order they took it. */
function recorder() {
  const took: string[] = [];
  let notify = () => undefined as void;
  return {
    took,
    listener:
      (name: string, takes: () => boolean = () => true) =>
      (message: string) => {
        if (!takes()) return false;
        took.push(`${name}:${message}`);
        notify();
        return true;
      },
    async until(count: number): Promise<void> {
      if (took.length >= count) return;
      await new Promise<void>((resolve) => (notify = () => (took.length >= count ? resolve() : undefined)));
    },
  };
}

describe('Redis wake-ups without FIFO: one waiter per process per release', () => {
  let server: TestRedisServer;
  let client: Redis;
  let admin: Redis;

  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.url);
    admin = new Redis(server.url);
  });

  afterAll(async () => {
    await Promise.all([client?.quit(), admin?.quit()]);
    await server?.stop();
  });

  it('hands a key over waiter by waiter: one release costs one retry, not one per waiter, in arrival order', async () => {
    const WAITERS = 8;
    // Long re-check interval and holder ttl: every retry in this test comes from a release message.
    const backend = new RedisLockBackend({ client, recheckInterval: 60_000, fairness: 'none' });
    const holder = lockRequest('turns', 60_000);
    const holderGrant = await backend.tryAcquire(holder);
    expect(holderGrant).not.toBeNull();

    const wait = deadline(30_000);
    try {
      const order: number[] = [];
      const done: Promise<void>[] = [];
      for (let i = 0; i < WAITERS; i++) {
        const before = await scriptCalls(admin);
        const request = lockRequest('turns', 60_000);
        done.push(
          backend.acquire(request, wait.signal).then(async (grant: LockGrant) => {
            order.push(i);
            await backend.release(held(request, grant));
          }),
        );
        // The first waiter: its first attempt, then (subscribed) its second. The others find the channel
        // subscribed already and subscribe before their only attempt. Each waits from here on, after the ones
        // before it.
        await eventually(async () => (await scriptCalls(admin)) - before >= (i === 0 ? 2 : 1));
      }

      await admin.config('RESETSTAT');
      await backend.release(held(holder, holderGrant!));
      await Promise.all(done);
      // The holder's release, then for each waiter one attempt (granted) and one release. A herd would
      // cost 8 + 7 + ... + 1 attempts instead of 8.
      expect(await scriptCalls(admin)).toBe(1 + 2 * WAITERS);
      expect(order).toEqual([...Array(WAITERS).keys()]);
    } finally {
      wait.dispose();
      await backend.close();
    }
  });

  it('still wakes every waiting reader with one release', async () => {
    const backend = new RedisLockBackend({ client, recheckInterval: 60_000, fairness: 'none' });
    const writer = lockRequest('readers-all-wake', 60_000);
    const writerGrant = await backend.tryAcquire(writer);
    const wait = deadline(30_000);
    try {
      const readers = Array.from({ length: 4 }, () => ({
        ...lockRequest('readers-all-wake', 60_000),
        mode: 'read' as const,
      }));
      const before = await scriptCalls(admin);
      const grants = readers.map((reader) => backend.acquire(reader, wait.signal));
      await eventually(async () => (await scriptCalls(admin)) - before >= 2 * readers.length);

      await backend.release(held(writer, writerGrant!));
      const granted = await Promise.all(grants);
      // All four hold it at once.
      for (const [index, grant] of granted.entries())
        expect(await backend.release(held(readers[index], grant))).toBe(true);
    } finally {
      wait.dispose();
      await backend.close();
    }
  });

  describe('ChannelSubscriber', () => {
    let subscriber: ChannelSubscriber;

    beforeEach(() => {
      subscriber = new ChannelSubscriber(new IoRedisPort(client).duplicateForSubscriber());
    });

    afterEach(async () => {
      await subscriber.close();
    });

    it('gives each message to the earliest turn-taker that takes it, and to every listener without turns', async () => {
      const seen = recorder();
      let firstTakes = false;
      const subscriptions = [
        subscriber.subscribe(
          'turns:a',
          seen.listener('first', () => firstTakes),
          { takesTurns: true },
        ),
        subscriber.subscribe('turns:a', seen.listener('second'), { takesTurns: true }),
        subscriber.subscribe('turns:a', seen.listener('third'), { takesTurns: true }),
        subscriber.subscribe('turns:a', seen.listener('all')),
      ];
      await Promise.all(subscriptions.map((subscription) => subscription.ready));

      // The first declines (as a waiter that is leaving or already woken would): the second takes it.
      await admin.publish('turns:a', '*');
      await seen.until(2);
      firstTakes = true;
      await admin.publish('turns:a', '*');
      await seen.until(4);
      expect([...seen.took].sort()).toEqual(['all:*', 'all:*', 'first:*', 'second:*']);

      // A listener that took a message but leaves without acting on it passes it on to the next.
      subscriptions[0].passOn('*');
      subscriptions[0].unsubscribe();
      await seen.until(5);
      expect(seen.took[4]).toBe('second:*');
      subscriptions.forEach((subscription) => subscription.unsubscribe());
    });
  });
});
