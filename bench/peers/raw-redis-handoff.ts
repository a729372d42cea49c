import Redis from 'ioredis';
import type { AdapterSpec, LockAdapter } from './adapter';

interface HandoffLock {
  readonly key: string;
  readonly id: string;
}

/** Take the key if free, else join the queue. No fencing counter, no waiter liveness: the least a FIFO lock does. */
const TAKE_OR_QUEUE = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
redis.call('RPUSH', KEYS[2], ARGV[1])
return 0`;

/** Owner check, then the key goes to the queue's head, told on its process's channel; or the key is deleted. */
const RELEASE_TO_HEAD = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local head = redis.call('LPOP', KEYS[2])
if not head then redis.call('DEL', KEYS[1]) return 0 end
redis.call('SET', KEYS[1], head, 'PX', ARGV[2])
redis.call('PUBLISH', ARGV[3] .. string.sub(head, 1, string.find(head, ':', 1, true) - 1), head)
return 1`;

const CHANNEL_PREFIX = 'bench:handoff:';

type HandoffClient = Redis & {
  takeOrQueue(lock: string, queue: string, id: string, ttl: number): Promise<number>;
  releaseToHead(lock: string, queue: string, id: string, ttl: number, channelPrefix: string): Promise<number>;
};

/**
 * The floor of a server-side FIFO queue with grant-on-release, for the cross-process scenario: one script to take
 * or queue, one to release that makes the head the holder and publishes to that waiter's process only. Nothing else:
 * no fencing token, no expiry of dead waiters, no re-check. Any fair Redis lock that hands over in one message
 * pays at least this.
 */
export const rawRedisHandoff: AdapterSpec = {
  name: 'limit: raw FIFO handoff (2 scripts)',
  store: 'redis',
  role: 'limit',
  waiting:
    'queues in a list; the release script makes the head the holder and publishes to its process (no fencing, no dead-waiter expiry)',
  waits: true,
  renews: false,
  async create(env, options) {
    const client = new Redis(env.redisUrl) as HandoffClient;
    client.defineCommand('takeOrQueue', { numberOfKeys: 2, lua: TAKE_OR_QUEUE });
    client.defineCommand('releaseToHead', { numberOfKeys: 2, lua: RELEASE_TO_HEAD });
    const subscriber = new Redis(env.redisUrl);
    const waiting = new Map<string, () => void>();
    subscriber.on('message', (_channel: string, id: string) => {
      const granted = waiting.get(id);
      waiting.delete(id);
      granted?.();
    });
    await subscriber.subscribe(`${CHANNEL_PREFIX}${process.pid}`);
    let next = 0;
    return {
      name: this.name,
      async acquire(key: string): Promise<HandoffLock> {
        const lock = { key: `bench:handoff:{${key}}`, id: `${process.pid}:${(next += 1)}` };
        // Registered before the script runs: the grant can arrive before the script's own reply.
        const granted = new Promise<void>((resolve) => waiting.set(lock.id, resolve));
        if ((await client.takeOrQueue(lock.key, `${lock.key}:queue`, lock.id, options.ttl)) === 1) {
          waiting.delete(lock.id);
          return lock;
        }
        await granted;
        return lock;
      },
      async release(lock: HandoffLock): Promise<void> {
        await client.releaseToHead(lock.key, `${lock.key}:queue`, lock.id, options.ttl, CHANNEL_PREFIX);
      },
      async close() {
        await Promise.all([client.quit(), subscriber.quit()]);
      },
    } satisfies LockAdapter<HandoffLock>;
  },
};
