import { MAX_TIMER_DELAY } from '../../utils/clock';
import type { RedisConnectionOptions, RedisLockClient } from './redis-client';
import type { RedisClientPackage } from './port/owned-client';
import { fenceRetentionOf } from './fence-retention';

/** Where the backend gets its connection: the app's client, or one it creates (and then closes) itself. */
export type RedisLockBackendConnection =
  /**
   * The app's client: an ioredis `Redis` or `Cluster` (every key of one lock shares a hash tag, so each
   * script runs on one node), or a connected node-redis client (`createClient()`, RESP 2 or 3). The backend
   * never closes it; it only duplicates it once for pub/sub.
   */
  | { client: RedisLockClient; url?: never; redisOptions?: never; clientPackage?: never }
  /**
   * e.g. 'redis://user:pass@host:6379/0'; `redisOptions` add to it. The backend creates the client with
   * `clientPackage` (default: ioredis when installed, else redis) and closes it.
   */
  | { url: string; redisOptions?: RedisConnectionOptions; clientPackage?: RedisClientPackage; client?: never }
  | { redisOptions: RedisConnectionOptions; url?: never; clientPackage?: RedisClientPackage; client?: never };

export interface RedisLockBackendTuning {
  /**
   * Longest time in ms a waiter sleeps before it retries on its own when no release message arrives.
   * Release messages are fire-and-forget and are lost while the subscriber reconnects; this bounds what a
   * lost one costs. Waiters also retry when the holder's lock expires, if that comes sooner. Default 1 000.
   */
  recheckInterval?: number;
  /**
   * 'fifo' (default): waiters join a queue on the server and are granted strictly in arrival order, across all
   * processes. An exclusive (or write) lock's release hands the lock straight to the queue's head: the release
   * script makes it the holder and publishes one message that only that waiter acts on, so a handoff costs
   * no retry round trip and wakes nobody else. Readers and semaphore waiters at the head are woken and retry.
   * Each waiter refreshes its queue entry every `waiterTtl / 3`. A waiter that dies while queued can still be
   * granted the lock until its entry expires (`waiterTtl` after its last refresh); the key then stays blocked
   * for that grant's ttl, as after a holder that died.
   * 'none': a release wakes one waiter per process and the fastest wins; a waiting writer still holds new
   * readers back. It lets a process retake a lock it just released (more grants per second for one process,
   * fewer for the others, and long tail waits). Use the same setting in every process that locks the same
   * keys: a 'none' waiter never overtakes a FIFO queue, but it is not in it either, so it only gets in once the
   * queue is empty.
   */
  fairness?: RedisFairness;
  /**
   * How long in ms a waiter's FIFO queue entry (or a waiting writer's intent) outlives its last refresh. A waiter
   * that died without leaving blocks those behind it for at most this long. Refreshed every third of it while
   * the waiter waits. Default 5 000.
   */
  waiterTtl?: number;
  /**
   * How long in ms a key's fencing counter stays on the server after the lock's ttl (and until the server's
   * clock has passed it): nothing else is left per key name once its locks are gone. Tokens keep increasing
   * after the counter expired as long as the server's clock does not step back by more than ttl + this.
   * Default 60 000.
   */
  fenceRetention?: number;
}

export type RedisFairness = 'none' | 'fifo';

export type RedisLockBackendOptions = RedisLockBackendConnection & RedisLockBackendTuning;

const DEFAULT_RECHECK_INTERVAL = 1_000;
const DEFAULT_WAITER_TTL = 5_000;
/** Below this a waiter could not refresh its entry in time on a busy machine. */
export const MIN_WAITER_TTL = 300;

/** The tuning options, checked and with their defaults. */
export interface RedisTuning {
  readonly recheckInterval: number;
  readonly fairness: RedisFairness;
  readonly waiterTtl: number;
  readonly fenceRetention: number;
}

/** `options`' tuning, or a TypeError that names the bad value. */
export function redisTuningOf(options: RedisLockBackendTuning): RedisTuning {
  const recheckInterval = options.recheckInterval ?? DEFAULT_RECHECK_INTERVAL;
  if (typeof recheckInterval !== 'number' || !(recheckInterval > 0) || recheckInterval > MAX_TIMER_DELAY) {
    throw new TypeError(
      `RedisLockBackend: recheckInterval must be a number of ms from 1 to ${MAX_TIMER_DELAY}, got ${JSON.stringify(options.recheckInterval)}.`,
    );
  }
  const fairness = options.fairness ?? 'fifo';
  if (fairness !== 'none' && fairness !== 'fifo') {
    throw new TypeError(
      `RedisLockBackend: fairness must be 'none' or 'fifo', got ${JSON.stringify(options.fairness)}.`,
    );
  }
  const waiterTtl = options.waiterTtl ?? DEFAULT_WAITER_TTL;
  if (!(waiterTtl >= MIN_WAITER_TTL) || !Number.isSafeInteger(waiterTtl)) {
    throw new TypeError(
      `RedisLockBackend: waiterTtl must be a whole number of ms >= ${MIN_WAITER_TTL}, got ${options.waiterTtl}.`,
    );
  }
  const fenceRetention = fenceRetentionOf('RedisLockBackend', options.fenceRetention);
  return { recheckInterval, fairness, waiterTtl, fenceRetention };
}
