import { randomBytes } from 'node:crypto';
import type { ElectionBackend } from '../../leader-election/election-backend.interface';
import { RedisElection } from '../../leader-election/redis/redis-election';
import type { AcquireRequest, BackendInspection, HeldLock, LockBackend, LockGrant } from '../lock-backend.interface';
import { BackendLifecycle } from '../shared/backend-lifecycle';
import { ChannelSubscriber } from './channel-subscriber';
import { extendCall, isLockedCall, releaseCall, runCall, type ScriptCall } from './lock-calls';
import { createOwnedPort } from './port/owned-client';
import type { RedisPort } from './port/redis-port';
import { redisPortOf } from './port/redis-port-of';
import { RedisCommands } from './redis-commands';
import { redisTuningOf, type RedisFairness, type RedisLockBackendOptions } from './redis-options';
import { runBatch } from './script-batch';
import { storedToken, withStoredToken } from './stored-token';
import { inspectRedis } from './redis-inspect';
import { validityEnd } from './validity';
import { RedisWaiter } from './redis-waiter';
import { checkOptionNames, optionNames } from '../../utils/validate';

export type { IoRedisLockClient, NodeRedisLockClient, RedisConnectionOptions, RedisLockClient } from './redis-client';
export type { RedisClientPackage } from './port/owned-client';
export type {
  RedisFairness,
  RedisLockBackendConnection,
  RedisLockBackendOptions,
  RedisLockBackendTuning,
} from './redis-options';

/** How long close() lets late grants of aborted attempts be released before closing connections. */
const CLEANUP_TIMEOUT_MS = 1_000;

const REDIS_OPTIONS = optionNames<RedisLockBackendOptions>({
  client: true,
  url: true,
  redisOptions: true,
  clientPackage: true,
  recheckInterval: true,
  fairness: true,
  waiterTtl: true,
  fenceRetention: true,
});

/**
 * Locks in one Redis server or Cluster: `SET NX PX` with the owner token for exclusive/write locks, ZSETs of
 * owner tokens with expiry scores for readers and semaphore permits, fencing tokens from a per-key counter,
 * waiters woken by a PUBLISH on release over one shared subscriber connection. Key layout: redis-keys.ts.
 */
export class RedisLockBackend implements LockBackend {
  readonly kind = 'redis';
  /** A busy try leaves nothing on the server (no queue entry, no intent): see LockBackend.tryBeforeWait. */
  readonly tryBeforeWait = true;
  readonly address: string;
  readonly supports = { readWrite: true, semaphore: true, expiry: true, lockDelay: true } as const;
  readonly fairness: RedisFairness;

  /** The app's (or our own) client behind the one port the algorithm talks to. */
  private readonly client: RedisPort;
  /** Set when we created the client: close() closes it. */
  private readonly closeOwnedClient?: () => Promise<void>;
  /** The calls (and their errors) the backend and its waiters share. */
  private readonly commands: RedisCommands;
  private subscriber?: ChannelSubscriber;
  /**
   * Names this backend's grant channels (`<namespace>:handoff:<id>`, subscribed while it has handoff waiters):
   * a release's PUBLISH there reaches this process only.
   */
  private readonly handoffId = randomBytes(8).toString('hex');
  /** Waiting acquires (close() aborts them) and clean-ups: releases of late grants, queue entries taken back. */
  private readonly lifecycle: BackendLifecycle;

  constructor(options: RedisLockBackendOptions) {
    checkOptionNames(options, REDIS_OPTIONS, 'RedisLockBackend options', "{ client } or { url: 'redis://host:6379' }");
    const tuning = redisTuningOf(options);
    this.fairness = tuning.fairness;
    if (options.client && (options.url !== undefined || options.redisOptions || options.clientPackage)) {
      throw new TypeError(
        'RedisLockBackend takes either { client } (one the app owns) or { url } / { redisOptions } (the backend ' +
          'opens its own), not both: drop one.',
      );
    }
    if (options.url !== undefined && (typeof options.url !== 'string' || options.url.trim() === '')) {
      throw new TypeError(
        `RedisLockBackend: url must be a string such as 'redis://host:6379', got ${JSON.stringify(options.url)}.`,
      );
    }
    if (options.client) {
      this.client = redisPortOf(options.client, 'RedisLockBackend');
    } else if (options.url !== undefined || options.redisOptions) {
      // Our own client: keep its connection errors for our messages instead of the client's console warning.
      const owned = createOwnedPort(options, (error) => (this.commands.lastConnectionError = error));
      this.client = owned.port;
      this.closeOwnedClient = owned.close;
    } else {
      throw new TypeError(
        'RedisLockBackend needs a connection: pass { client } (an ioredis Redis or Cluster, or a node-redis client, ' +
          "that the app owns), { url: 'redis://host:6379' } or { redisOptions }.",
      );
    }
    this.address = this.client.address;
    this.lifecycle = new BackendLifecycle(this.kind, this.address);
    this.commands = new RedisCommands(this.client, tuning, this.lifecycle);
  }

  /** @internal LeaderElection on this backend's client and shared subscriber connection. */
  createElectionBackend(): ElectionBackend {
    return new RedisElection(
      this.client,
      this.address,
      () => this.sharedSubscriber(),
      this.commands.tuning.recheckInterval,
      () => this.commands.connectionState(),
    );
  }

  tryAcquire(given: AcquireRequest, operation: 'acquire' | 'tryAcquire' = 'tryAcquire'): Promise<LockGrant | null> {
    try {
      this.lifecycle.assertOpen(operation);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.commands.tryOnce(withStoredToken(given), operation);
  }

  async acquire(given: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    this.lifecycle.assertOpen('acquire');
    if (signal.aborted) throw signal.reason;
    const request = withStoredToken(given);
    // close() can abort the wait too.
    return this.lifecycle.wait(signal, async (own) =>
      new RedisWaiter(this.commands, this.sharedSubscriber(), this.handoffId, request, own).acquire(),
    );
  }

  async extend(lock: HeldLock, ttl: number): Promise<number | null> {
    this.lifecycle.assertOpen('extend');
    const startedAt = performance.now();
    const reply = await this.commands.call('extend', runCall(this.client, extendCall(lock, ttl, storedToken(lock))));
    return reply === 1 ? validityEnd(startedAt, ttl) : null;
  }

  /** Renews many held locks (of any kind) in one pipeline, or one per node on a Cluster: see script-batch.ts. */
  async extendMany(items: readonly { lock: HeldLock; ttl: number }[]): Promise<(number | null | Error)[]> {
    this.lifecycle.assertOpen('extend');
    const startedAt = performance.now();
    const calls = new Array<ScriptCall>(items.length);
    for (let index = 0; index < items.length; index++)
      calls[index] = extendCall(items[index].lock, items[index].ttl, storedToken(items[index].lock));
    const results = await this.commands.call('extend', runBatch(this.client, calls));
    return results.map((result, index) => {
      if (!result.ok) return this.commands.toBackendError('extend', result.error);
      return result.reply === 1 ? validityEnd(startedAt, items[index].ttl) : null;
    });
  }

  release(lock: HeldLock): Promise<boolean> {
    try {
      this.lifecycle.assertOpen('release');
    } catch (error) {
      return Promise.reject(error);
    }
    const call = releaseCall(lock, this.commands.fifo, storedToken(lock), this.commands.tuning.fenceRetention);
    return this.commands.call('release', runCall(this.client, call), (reply) => reply === 1);
  }

  /** Who holds the name and, in FIFO mode, who waits in order: see inspectRedis. */
  async inspect(namespace: string, key: string): Promise<BackendInspection> {
    this.lifecycle.assertOpen('inspect');
    return this.commands.call('inspect', inspectRedis(this.client, namespace, key, this.commands.fifo));
  }

  /** Whether a writer or any live reader holds the key (semaphores are apart and not counted). */
  async isLocked(namespace: string, key: string): Promise<boolean> {
    this.lifecycle.assertOpen('isLocked');
    return (await this.commands.call('isLocked', runCall(this.client, isLockedCall(namespace, key)))) === 1;
  }

  /** The client's status and, for a client we created, its last connection error; undefined while it is ready. */
  describeConnection(): string | undefined {
    return this.commands.connectionState();
  }

  close(): Promise<void> {
    return this.lifecycle.close(() => this.shutdown());
  }

  /** The shared subscriber, created at the first wait; replaced if the client gave its connection up for good. */
  private sharedSubscriber(): ChannelSubscriber {
    this.lifecycle.assertOpen('acquire');
    if (!this.subscriber?.isUsable) {
      // One that is only suspected still holds a connection: close it (its waiters re-check on their own).
      void this.subscriber?.close().catch(() => undefined);
      this.subscriber = new ChannelSubscriber(this.client.duplicateForSubscriber());
    }
    return this.subscriber;
  }

  private async shutdown(): Promise<void> {
    const reason = this.commands.error('acquire', 'the backend was closed while this acquire was waiting');
    // Every wait step races the aborted signal, so these settle promptly.
    await this.lifecycle.endAcquires(reason, CLEANUP_TIMEOUT_MS);
    // Only a connected client can still deliver those releases; otherwise the locks expire after their ttl.
    if ((this.client.status() ?? 'ready') === 'ready') await this.lifecycle.drain(CLEANUP_TIMEOUT_MS);
    await this.subscriber?.close();
    await this.closeOwnedClient?.();
  }
}
