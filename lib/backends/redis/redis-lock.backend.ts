import type { RedisOptions } from 'ioredis';
import { LockBackendError } from '../../errors/lock-backend.error';
import { LockError } from '../../errors/lock-error';
import type { AcquireRequest, HeldLock, LockBackend, LockGrant } from '../lock-backend.interface';
import { raceAbort, timeoutSignal } from '../shared/abort';
import { loadOptionalPackage } from '../shared/optional-require';
import { ACQUIRE_SCRIPT, parseAcquireReply } from './acquire.lua';
import { ChannelSubscriber, type ChannelSubscription } from './channel-subscriber';
import { EXTEND_SCRIPT } from './extend.lua';
import {
  closeConnection,
  describeAddress,
  type RedisConnection,
  type RedisLockClient,
} from './redis-client';
import { redisLockKeys } from './redis-keys';
import { isNoScriptError } from './redis-script';
import { RELEASE_SCRIPT } from './release.lua';
import { validityEnd } from './validity';
import { Wakeup } from './wakeup';

export type { RedisLockClient } from './redis-client';

/** Where the backend gets its connection: the app's client, or one it creates (and then closes) itself. */
export type RedisLockBackendConnection =
  /** The app's ioredis client. The backend never closes it; it only duplicates it once for pub/sub. */
  | { client: RedisLockClient; url?: never; redisOptions?: never }
  /** e.g. 'redis://user:pass@host:6379/0'; `redisOptions` add to it. */
  | { url: string; redisOptions?: RedisOptions; client?: never }
  | { redisOptions: RedisOptions; url?: never; client?: never };

export interface RedisLockBackendTuning {
  /**
   * Longest time in ms a waiter sleeps before it retries on its own when no release message arrives.
   * Release messages are fire-and-forget and are lost while the subscriber reconnects; this bounds what a
   * lost one costs. Waiters also retry when the holder's lock expires, if that comes sooner. Default 1 000.
   */
  recheckInterval?: number;
}

export type RedisLockBackendOptions = RedisLockBackendConnection & RedisLockBackendTuning;

const DEFAULT_RECHECK_INTERVAL = 1_000;
/** How long close() lets late grants of aborted attempts be released before closing connections. */
const CLEANUP_TIMEOUT_MS = 1_000;

/** Our subscriber connection's overrides of the app's options. */
const SUBSCRIBER_OPTIONS: Partial<RedisOptions> = {
  // Named, so operators can tell it apart in CLIENT LIST.
  connectionName: 'nest-distributed-lock:subscriber',
  // A SUBSCRIBE sent while the connection is still opening waits for it instead of failing.
  enableOfflineQueue: true,
  // After a reconnect ioredis subscribes our channels again (messages in the gap are covered by re-checks).
  autoResubscribe: true,
  lazyConnect: false,
};

/** The outcome of one SET NX attempt. */
type Attempt =
  | { readonly granted: LockGrant }
  | { readonly busyFor: number }
  /** Granted, but the answer came after the lock's validity had passed; it was released again. */
  | { readonly tooLateBy: number };

/**
 * Locks in one Redis server: `SET NX PX` with the owner token, fencing tokens from a per-key counter,
 * waiters woken by a PUBLISH on release over one shared subscriber connection. Key layout: redis-keys.ts.
 */
export class RedisLockBackend implements LockBackend {
  readonly kind = 'redis';
  readonly address: string;

  private readonly client: RedisLockClient;
  /** Set when we created the client, so close() quits it. */
  private readonly ownedClient?: RedisConnection;
  private readonly recheckInterval: number;
  private subscriber?: ChannelSubscriber;
  /** Each waiting acquire: its abort controller (aborted by close()) and its outcome. */
  private readonly waiters = new Map<AbortController, Promise<unknown>>();
  /** Releases of grants that arrived after their acquire was aborted. */
  private readonly cleanups = new Set<Promise<unknown>>();
  private lastConnectionError?: Error;
  private closing?: Promise<void>;

  constructor(options: RedisLockBackendOptions) {
    this.recheckInterval = options.recheckInterval ?? DEFAULT_RECHECK_INTERVAL;
    if (!(this.recheckInterval > 0)) {
      throw new TypeError(`RedisLockBackend: recheckInterval must be a positive number of ms, got ${this.recheckInterval}.`);
    }
    if (options.client) {
      this.client = options.client;
    } else if (options.url !== undefined || options.redisOptions) {
      const { Redis } = loadOptionalPackage<typeof import('ioredis')>('ioredis', 'Redis');
      const created =
        options.url !== undefined ? new Redis(options.url, options.redisOptions ?? {}) : new Redis(options.redisOptions!);
      // Our own client: keep its connection errors for our messages instead of ioredis' console warning.
      created.on('error', (error: Error) => (this.lastConnectionError = error));
      this.client = created;
      this.ownedClient = created;
    } else {
      throw new TypeError(
        'RedisLockBackend needs a connection: pass { client } (an ioredis Redis the app owns), ' +
          "{ url: 'redis://host:6379' } or { redisOptions }.",
      );
    }
    this.address = describeAddress(this.client.options);
  }

  async tryAcquire(request: AcquireRequest): Promise<LockGrant | null> {
    this.assertOpen('tryAcquire');
    const outcome = await this.attempt(request, 'tryAcquire');
    if ('granted' in outcome) return outcome.granted;
    if ('tooLateBy' in outcome) {
      throw this.error(
        'tryAcquire',
        `the server answered ${Math.ceil(outcome.tooLateBy)} ms after the ${request.ttl} ms lock's validity had passed`,
      );
    }
    return null;
  }

  async acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    this.assertOpen('acquire');
    if (signal.aborted) throw signal.reason;
    // Our own controller follows the caller's signal, and close() can abort it too.
    const controller = new AbortController();
    const follow = () => controller.abort(signal.reason);
    signal.addEventListener('abort', follow, { once: true });
    const outcome = this.acquireOrWait(request, controller.signal);
    this.waiters.set(controller, outcome);
    try {
      return await outcome;
    } finally {
      signal.removeEventListener('abort', follow);
      this.waiters.delete(controller);
    }
  }

  async extend(lock: HeldLock, ttl: number): Promise<number | null> {
    this.assertOpen('extend');
    const keys = redisLockKeys(lock.namespace, lock.key);
    const startedAt = performance.now();
    const reply = await this.call('extend', EXTEND_SCRIPT.run(this.client, [keys.lock], [lock.token, ttl]));
    return reply === 1 ? validityEnd(startedAt, ttl) : null;
  }

  /**
   * Renews many held locks in one pipeline (one round trip, one write). A NOSCRIPT reply (after a restart)
   * costs that item one EVAL, which also reloads the script for the next batch.
   */
  async extendMany(items: readonly { lock: HeldLock; ttl: number }[]): Promise<(number | null | Error)[]> {
    this.assertOpen('extend');
    if (!this.client.pipeline) return Promise.all(items.map(({ lock, ttl }) => this.extend(lock, ttl).catch((e: Error) => e)));
    const pipeline = this.client.pipeline();
    const keys = items.map(({ lock }) => redisLockKeys(lock.namespace, lock.key).lock);
    items.forEach(({ lock, ttl }, index) => pipeline.evalsha(EXTEND_SCRIPT.sha1, 1, keys[index], lock.token, ttl));
    const startedAt = performance.now();
    const replies = await this.call('extend', pipeline.exec());
    if (!replies) throw this.error('extend', 'the renewal pipeline was discarded');
    return Promise.all(
      replies.map(async ([error, reply], index) => {
        const { lock, ttl } = items[index];
        try {
          if (error && !isNoScriptError(error)) throw error;
          const result = error ? await EXTEND_SCRIPT.run(this.client, [keys[index]], [lock.token, ttl]) : reply;
          return result === 1 ? validityEnd(startedAt, ttl) : null;
        } catch (failure) {
          return this.toBackendError('extend', failure);
        }
      }),
    );
  }

  async release(lock: HeldLock): Promise<boolean> {
    this.assertOpen('release');
    const keys = redisLockKeys(lock.namespace, lock.key);
    const reply = await this.call('release', RELEASE_SCRIPT.run(this.client, [keys.lock], [lock.token, keys.channel]));
    return reply === 1;
  }

  async isLocked(namespace: string, key: string): Promise<boolean> {
    this.assertOpen('isLocked');
    return (await this.call('isLocked', this.client.exists(redisLockKeys(namespace, key).lock))) > 0;
  }

  close(): Promise<void> {
    return (this.closing ??= this.shutdown());
  }

  /**
   * One attempt first, so an uncontended acquire is a single round trip. When busy: subscribe to the
   * key's release channel, and only then try again, so a release between the two attempts cannot be
   * missed. Then sleep until a release message, the holder's expiry or `recheckInterval`, and retry.
   */
  private async acquireOrWait(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    const first = await this.attempt(request, 'acquire', signal);
    if ('granted' in first) return first.granted;
    if (signal.aborted) throw signal.reason;
    const wakeup = new Wakeup();
    const subscription = this.sharedSubscriber().subscribe(
      redisLockKeys(request.namespace, request.key).channel,
      wakeup.notify,
    );
    try {
      await this.subscribed(subscription, signal);
      for (;;) {
        wakeup.reset();
        const outcome = await this.attempt(request, 'acquire', signal);
        if ('granted' in outcome) return outcome.granted;
        // After a too-late grant (already released again) the key is free: retry at once.
        if ('busyFor' in outcome) await wakeup.wait(this.recheckDelay(outcome.busyFor), signal);
      }
    } finally {
      subscription.unsubscribe();
    }
  }

  /**
   * Runs the acquire script once. `validUntil` counts from just before this request was sent.
   * With a `signal`, an abort while the server has not answered rejects with a LockBackendError; if the
   * script then succeeds anyway, that grant is released, so nothing is ever granted after the abort.
   */
  private async attempt(request: AcquireRequest, operation: string, signal?: AbortSignal): Promise<Attempt> {
    const keys = redisLockKeys(request.namespace, request.key);
    const startedAt = performance.now();
    const call = ACQUIRE_SCRIPT.run(this.client, [keys.lock, keys.fence], [request.token, request.ttl]);
    let abortedFirst = false;
    let reply: unknown;
    try {
      reply = signal
        ? await raceAbort(call, signal, () => {
            abortedFirst = true;
            return this.noAnswerError(operation, signal);
          })
        : await call;
    } catch (error) {
      if (abortedFirst) this.releaseIfGranted(call, request);
      throw abortedFirst ? error : this.toBackendError(operation, error);
    }
    const parsed = parseAcquireReply(reply);
    if (!parsed) throw this.error(operation, `unexpected reply from the acquire script: ${JSON.stringify(reply)}`);
    if (!parsed.granted) return { busyFor: parsed.holderPttl };
    const validUntil = validityEnd(startedAt, request.ttl);
    const now = performance.now();
    if (signal?.aborted || validUntil <= now) {
      this.track(this.releaseQuietly(request));
      if (signal?.aborted) throw signal.reason;
      return { tooLateBy: now - validUntil };
    }
    return { granted: { fencingToken: parsed.fencingToken, validUntil } };
  }

  private async subscribed(subscription: ChannelSubscription, signal: AbortSignal): Promise<void> {
    let abortedFirst = false;
    try {
      await raceAbort(subscription.ready, signal, () => {
        abortedFirst = true;
        return this.noAnswerError('acquire', signal);
      });
    } catch (error) {
      if (abortedFirst) throw error;
      throw this.error('acquire', `could not subscribe to release messages: ${messageOf(error)}`, error);
    }
  }

  /** The shared subscriber, created at the first wait; replaced if ioredis gave its connection up for good. */
  private sharedSubscriber(): ChannelSubscriber {
    if (this.closing) throw this.error('acquire', 'the backend is closed');
    if (!this.subscriber?.isUsable) {
      const connection = this.client.duplicate(SUBSCRIBER_OPTIONS);
      // Its failures surface through SUBSCRIBE replies; without a listener ioredis would print each one.
      connection.on('error', () => undefined);
      this.subscriber = new ChannelSubscriber(connection);
    }
    return this.subscriber;
  }

  private recheckDelay(holderPttl: number): number {
    // PTTL -1 means the key has no expiry (not one of ours); only the re-check interval bounds the wait.
    if (holderPttl < 0) return this.recheckInterval;
    return Math.min(Math.max(holderPttl, 1), this.recheckInterval);
  }

  private releaseIfGranted(call: Promise<unknown>, request: AcquireRequest): void {
    this.track(
      call.then(
        (reply) => (parseAcquireReply(reply)?.granted ? this.releaseQuietly(request) : undefined),
        () => undefined,
      ),
    );
  }

  /** Best effort: if this fails, the lock expires after its ttl. */
  private releaseQuietly(request: AcquireRequest): Promise<unknown> {
    const keys = redisLockKeys(request.namespace, request.key);
    return RELEASE_SCRIPT.run(this.client, [keys.lock], [request.token, keys.channel]).catch(() => undefined);
  }

  private track(cleanup: Promise<unknown>): void {
    this.cleanups.add(cleanup);
    void cleanup.finally(() => this.cleanups.delete(cleanup));
  }

  private async shutdown(): Promise<void> {
    const reason = this.error('acquire', 'the backend was closed while this acquire was waiting');
    for (const controller of this.waiters.keys()) controller.abort(reason);
    // Every wait step races the aborted signal, so these settle promptly.
    await Promise.allSettled(this.waiters.values());
    // Only a connected client can still deliver those releases; otherwise the locks expire after their ttl.
    if (this.cleanups.size > 0 && (this.client.status ?? 'ready') === 'ready') {
      const deadline = timeoutSignal(CLEANUP_TIMEOUT_MS, () => undefined);
      await raceAbort(Promise.allSettled(this.cleanups), deadline.signal, () => undefined).catch(() => undefined);
      deadline.dispose();
    }
    await this.subscriber?.close();
    if (this.ownedClient) await closeConnection(this.ownedClient);
  }

  private assertOpen(operation: string): void {
    if (this.closing) throw this.error(operation, 'the backend is closed');
  }

  private async call<T>(operation: string, work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      throw this.toBackendError(operation, error);
    }
  }

  private noAnswerError(operation: string, signal: AbortSignal): unknown {
    // close() aborts waiters with its own LockBackendError; keep it.
    if (signal.reason instanceof LockBackendError) return signal.reason;
    return this.error(operation, `no answer from the server before the deadline${this.connectionHint()}`, signal.reason);
  }

  private toBackendError(operation: string, error: unknown): LockError {
    if (error instanceof LockError) return error;
    return this.error(operation, `${messageOf(error)}${this.connectionHint()}`, error);
  }

  /** What we know about the connection, for "why did it not answer" messages. */
  private connectionHint(): string {
    const hints: string[] = [];
    const status = this.client.status;
    if (status && status !== 'ready') hints.push(`connection ${status}`);
    if (this.lastConnectionError && status !== 'ready') hints.push(`last connection error: ${this.lastConnectionError.message}`);
    return hints.length > 0 ? ` (${hints.join('; ')})` : '';
  }

  private error(operation: string, detail: string, cause?: unknown): LockBackendError {
    return new LockBackendError(this.kind, this.address, operation, detail, cause === undefined ? undefined : { cause });
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
