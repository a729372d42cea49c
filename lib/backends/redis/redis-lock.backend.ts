import { randomBytes } from 'node:crypto';
import type { ElectionBackend } from '../../leader-election/election-backend.interface';
import { RedisElection } from '../../leader-election/redis/redis-election';
import { LockBackendError } from '../../errors/lock-backend.error';
import { LockError } from '../../errors/lock-error';
import type { AcquireRequest, BackendInspection, HeldLock, LockBackend, LockGrant } from '../lock-backend.interface';
import { raceAbort } from '../shared/abort';
import { BackendLifecycle } from '../shared/backend-lifecycle';
import { parseAcquireReply } from './acquire.lua';
import { ChannelSubscriber, type ChannelSubscription } from './channel-subscriber';
import {
  acquireCall,
  channelOf,
  extendCall,
  isLockedCall,
  kindOf,
  leaveCall,
  releaseCall,
  runCall,
  waitStyle,
  type HandoffTarget,
  type ScriptCall,
  type WaitStyle,
} from './lock-calls';
import type { RedisConnectionOptions, RedisLockClient } from './redis-client';
import { createOwnedPort, type RedisClientPackage } from './port/owned-client';
import type { RedisPort } from './port/redis-port';
import { redisPortOf } from './port/redis-port-of';
import { fenceRetentionOf } from './fence-retention';
import { runBatch } from './script-batch';
import { storedToken, withStoredToken } from './stored-token';
import { inspectRedis } from './redis-inspect';
import { handoffValidityEnd, validityEnd } from './validity';
import { Wakeup } from './wakeup';

export type { IoRedisLockClient, NodeRedisLockClient, RedisConnectionOptions, RedisLockClient } from './redis-client';
export type { RedisClientPackage } from './port/owned-client';

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
const MIN_WAITER_TTL = 300;
/** How long close() lets late grants of aborted attempts be released before closing connections. */
const CLEANUP_TIMEOUT_MS = 1_000;

/** The outcome of one acquire script run. */
type Attempt =
  | { readonly granted: LockGrant }
  /** `sentAt` (ours) and `serverTime` (the server's ms, when told): for a handoff's validity. */
  | { readonly busyFor: number; readonly sentAt: number; readonly serverTime?: number }
  /** Granted, but the answer came after the lock's validity had passed; it was released again. */
  | { readonly tooLateBy: number };

type BusyAttempt = Extract<Attempt, { busyFor: number }>;

/** A waiter's acquire call in flight: its queue entry is only taken back after it settled. */
interface InFlight {
  call?: Promise<unknown>;
  /**
   * The server already answered this acquire (the key was busy). A deadline that then passes while a later
   * call is still in flight means "still busy, the server is just slow", not "unreachable".
   */
  answered?: boolean;
}

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
  private readonly recheckInterval: number;
  private readonly waiterTtl: number;
  private readonly fenceRetention: number;
  private subscriber?: ChannelSubscriber;
  /**
   * Names this backend's grant channels (`<namespace>:handoff:<id>`, subscribed while it has handoff waiters):
   * a release's PUBLISH there reaches this process only.
   */
  private readonly handoffId = randomBytes(8).toString('hex');
  /** Waiting acquires (close() aborts them) and clean-ups: releases of late grants, queue entries taken back. */
  private readonly lifecycle: BackendLifecycle;
  private lastConnectionError?: Error;

  constructor(options: RedisLockBackendOptions) {
    this.recheckInterval = options.recheckInterval ?? DEFAULT_RECHECK_INTERVAL;
    if (!(this.recheckInterval > 0)) {
      throw new TypeError(
        `RedisLockBackend: recheckInterval must be a positive number of ms, got ${this.recheckInterval}.`,
      );
    }
    this.fairness = options.fairness ?? 'fifo';
    if (this.fairness !== 'none' && this.fairness !== 'fifo') {
      throw new TypeError(
        `RedisLockBackend: fairness must be 'none' or 'fifo', got ${JSON.stringify(options.fairness)}.`,
      );
    }
    this.waiterTtl = options.waiterTtl ?? DEFAULT_WAITER_TTL;
    if (!(this.waiterTtl >= MIN_WAITER_TTL) || !Number.isSafeInteger(this.waiterTtl)) {
      throw new TypeError(
        `RedisLockBackend: waiterTtl must be a whole number of ms >= ${MIN_WAITER_TTL}, got ${options.waiterTtl}.`,
      );
    }
    this.fenceRetention = fenceRetentionOf('RedisLockBackend', options.fenceRetention);
    if (options.client) {
      this.client = redisPortOf(options.client, 'RedisLockBackend');
    } else if (options.url !== undefined || options.redisOptions) {
      // Our own client: keep its connection errors for our messages instead of the client's console warning.
      const owned = createOwnedPort(options, (error) => (this.lastConnectionError = error));
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
  }

  /** @internal LeaderElection on this backend's client and shared subscriber connection. */
  createElectionBackend(): ElectionBackend {
    return new RedisElection(this.client, this.address, () => this.sharedSubscriber(), this.recheckInterval);
  }

  async tryAcquire(given: AcquireRequest): Promise<LockGrant | null> {
    this.lifecycle.assertOpen('tryAcquire');
    const request = withStoredToken(given);
    const outcome = await this.attempt(request, 'tryAcquire', 'none');
    if ('granted' in outcome) return outcome.granted;
    if ('tooLateBy' in outcome) {
      throw this.error(
        'tryAcquire',
        `the server answered ${Math.ceil(outcome.tooLateBy)} ms after the ${request.ttl} ms lock's validity had passed`,
      );
    }
    return null;
  }

  async acquire(given: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    this.lifecycle.assertOpen('acquire');
    if (signal.aborted) throw signal.reason;
    const request = withStoredToken(given);
    // close() can abort the wait too.
    return this.lifecycle.wait(signal, (own) => this.acquireOrWait(request, own));
  }

  async extend(lock: HeldLock, ttl: number): Promise<number | null> {
    this.lifecycle.assertOpen('extend');
    const startedAt = performance.now();
    const reply = await this.call('extend', runCall(this.client, extendCall(lock, ttl, storedToken(lock))));
    return reply === 1 ? validityEnd(startedAt, ttl) : null;
  }

  /** Renews many held locks (of any kind) in one pipeline, or one per node on a Cluster: see script-batch.ts. */
  async extendMany(items: readonly { lock: HeldLock; ttl: number }[]): Promise<(number | null | Error)[]> {
    this.lifecycle.assertOpen('extend');
    const startedAt = performance.now();
    const calls = new Array<ScriptCall>(items.length);
    for (let index = 0; index < items.length; index++)
      calls[index] = extendCall(items[index].lock, items[index].ttl, storedToken(items[index].lock));
    const results = await this.call('extend', runBatch(this.client, calls));
    return results.map((result, index) => {
      if (!result.ok) return this.toBackendError('extend', result.error);
      return result.reply === 1 ? validityEnd(startedAt, items[index].ttl) : null;
    });
  }

  async release(lock: HeldLock): Promise<boolean> {
    this.lifecycle.assertOpen('release');
    return (
      (await this.call(
        'release',
        runCall(this.client, releaseCall(lock, this.fairness === 'fifo', storedToken(lock), this.fenceRetention)),
      )) === 1
    );
  }

  /** Who holds the name and, in FIFO mode, who waits in order: see inspectRedis. */
  async inspect(namespace: string, key: string): Promise<BackendInspection> {
    this.lifecycle.assertOpen('inspect');
    return this.call('inspect', inspectRedis(this.client, namespace, key, this.fairness === 'fifo'));
  }

  /** Whether a writer or any live reader holds the key (semaphores are apart and not counted). */
  async isLocked(namespace: string, key: string): Promise<boolean> {
    this.lifecycle.assertOpen('isLocked');
    return (await this.call('isLocked', runCall(this.client, isLockedCall(namespace, key)))) === 1;
  }

  close(): Promise<void> {
    return this.lifecycle.close(() => this.shutdown());
  }

  /**
   * One attempt first, so an uncontended acquire is a single round trip. When busy, that attempt already
   * registered how we wait (a FIFO entry, or a writer's intent). Then subscribe to the key's release channel,
   * and only then try again, so a release between the two attempts cannot be missed. When another waiter of
   * this process already has the channel subscribed, we subscribe before the first attempt instead, and that
   * attempt is the only one. Then sleep until a release message for us (or, handoff style, the grant itself),
   * the holder's expiry, our entry's refresh time or `recheckInterval`, and retry.
   * Whatever ends the wait without a grant takes our entry back (after the last call settled).
   */
  private async acquireOrWait(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    const style = waitStyle(request, this.fairness === 'fifo');
    const inFlight: InFlight = {};
    let queued = style !== 'none';
    // A release granted us the lock (handoff style): its message, not yet acted on.
    let handed: HandoffMessage | undefined;
    const wakeup = new Wakeup();
    const takesTurns = this.takesTurns(request);
    const channel = channelOf(request);
    const subscriber = this.sharedSubscriber();
    const subscribe = () =>
      subscriber.subscribe(
        channel,
        (message) => {
          if (!this.wakes(message, request)) return false;
          // A turn goes to a waiter that will act on it: not one that is leaving or already has a wake to act on.
          if (takesTurns && (signal.aborted || wakeup.pending)) return false;
          wakeup.notify();
          return true;
        },
        { takesTurns },
      );
    let subscription: ChannelSubscription | undefined;
    let granted = false;
    // The attempt in flight follows a wake this waiter took.
    let actingOnWake = false;
    let handoff: HandoffTarget | undefined;
    let grants: ChannelSubscription | undefined;
    try {
      if (style === 'handoff') {
        // Subscribed before we queue: a release can grant us the lock from the moment our entry exists.
        const target: HandoffTarget = {
          channel: `${request.namespace}:handoff:${this.handoffId}`,
          check: !this.client.isCluster,
        };
        grants = subscriber.subscribe(target.channel, (message) => {
          const grant = parseHandoff(message, request.token);
          if (!grant) return;
          handed = grant;
          wakeup.notify();
        });
        if (!subscriber.isConfirmed(target.channel)) await this.subscribed(grants, signal, inFlight);
        handoff = target;
      }
      if (subscriber.isConfirmed(channel)) subscription = subscribe();
      const first = await this.attempt(request, 'acquire', style, signal, inFlight, handoff);
      if ('granted' in first) {
        queued = false;
        granted = true;
        return first.granted;
      }
      if (signal.aborted) throw signal.reason;
      // The last "busy" answer: what a handoff's validity is measured from.
      let lastBusy = 'busyFor' in first ? first : undefined;
      // Subscribed only now: one more attempt, as a release may have come before the subscription.
      let waitFirst = subscription !== undefined && lastBusy !== undefined;
      if (!subscription) {
        subscription = subscribe();
        await this.subscribed(subscription, signal, inFlight);
      }
      for (;;) {
        if (waitFirst && !handed) await wakeup.wait(this.recheckDelay(lastBusy!.busyFor, style), signal);
        waitFirst = true;
        if (handed) {
          const grant = this.handedGrant(request, handed, lastBusy);
          handed = undefined;
          if (grant) {
            queued = false;
            granted = true;
            return grant;
          }
          // Handed over too late to be of use (a stalled event loop): released again, we queue anew.
        }
        actingOnWake = wakeup.pending;
        wakeup.reset();
        const outcome = await this.attempt(request, 'acquire', style, signal, inFlight, handoff);
        actingOnWake = false;
        if ('granted' in outcome) {
          queued = false;
          granted = true;
          return outcome.granted;
        }
        if ('busyFor' in outcome) lastBusy = outcome;
        // After a too-late grant (already released again) the key is free: retry at once.
        else waitFirst = false;
      }
    } finally {
      grants?.unsubscribe();
      if (subscription) {
        // Leaving (deadline, abort, error) with a wake we took but did not see through: the next local waiter
        // tries instead. (An attempt that answered "busy" after the wake saw it through: the holder will publish.)
        if (!granted && (wakeup.pending || actingOnWake)) subscription.passOn('*');
        subscription.unsubscribe();
      }
      // A handoff waiter's leave also releases a grant that reached it (or was on its way) as it gave up.
      if (queued) this.leaveQuietly(request, style, inFlight.call, handoff);
    }
  }

  /**
   * The grant a release handed us, valid from our last busy answer (see handoffValidityEnd); `undefined` when
   * that validity has passed already or cannot be known: then the lock is released again (to the next waiter).
   */
  private handedGrant(
    request: AcquireRequest,
    handed: HandoffMessage,
    lastBusy: BusyAttempt | undefined,
  ): LockGrant | undefined {
    if (lastBusy?.serverTime !== undefined) {
      const validUntil = handoffValidityEnd(lastBusy.sentAt, lastBusy.serverTime, handed.grantedAt, request.ttl);
      if (validUntil > performance.now()) return { fencingToken: handed.fencingToken, validUntil };
    }
    this.lifecycle.track(this.releaseQuietly(request));
    return undefined;
  }

  /**
   * Without FIFO, a release message ('*') wakes one exclusive waiter (or semaphore waiter) per process: the
   * earliest still waiting here, since only one can win the freed lock or permit; if it loses to another
   * process, that one's release wakes it again. Readers all wake: they can all enter together. FIFO waiters
   * all see every message and pick out their own token. The re-check timers still bound every wait.
   */
  private takesTurns(request: AcquireRequest): boolean {
    return this.fairness !== 'fifo' && kindOf(request) !== 'read';
  }

  /** FIFO waiters only wake for messages naming them (or '*'); others wake on every release. */
  private wakes(message: string, request: AcquireRequest): boolean {
    return this.fairness !== 'fifo' || message === '*' || message.split(' ').includes(request.token);
  }

  /**
   * Runs the acquire script once. `validUntil` counts from just before this request was sent.
   * With a `signal`, an abort while the server has not answered rejects with a LockBackendError; if the
   * script then succeeds anyway, that grant is released, so nothing is ever granted after the abort.
   */
  private async attempt(
    request: AcquireRequest,
    operation: string,
    style: WaitStyle,
    signal?: AbortSignal,
    inFlight?: InFlight,
    handoff?: HandoffTarget,
  ): Promise<Attempt> {
    const startedAt = performance.now();
    const call = runCall(
      this.client,
      acquireCall(request, style, this.waiterTtl, this.fenceRetention, operation === 'acquire', handoff),
    );
    if (inFlight) inFlight.call = call;
    let abortedFirst = false;
    let reply: unknown;
    try {
      reply = signal
        ? await raceAbort(call, signal, () => {
            abortedFirst = true;
            return inFlight?.answered ? signal.reason : this.noAnswerError(operation, signal);
          })
        : await call;
    } catch (error) {
      if (abortedFirst) this.releaseIfGranted(call, request);
      throw abortedFirst ? error : this.toBackendError(operation, error);
    }
    const parsed = parseAcquireReply(reply);
    if (!parsed) throw this.error(operation, `unexpected reply from the acquire script: ${JSON.stringify(reply)}`);
    if (inFlight) inFlight.answered = true;
    if (!parsed.granted) return { busyFor: parsed.retryIn, sentAt: startedAt, serverTime: parsed.serverTime };
    const validUntil = validityEnd(startedAt, request.ttl);
    const now = performance.now();
    if (signal?.aborted || validUntil <= now) {
      this.lifecycle.track(this.releaseQuietly(request));
      if (signal?.aborted) throw signal.reason;
      return { tooLateBy: now - validUntil };
    }
    return { granted: { fencingToken: parsed.fencingToken, validUntil } };
  }

  private async subscribed(subscription: ChannelSubscription, signal: AbortSignal, inFlight: InFlight): Promise<void> {
    let abortedFirst = false;
    try {
      await raceAbort(subscription.ready, signal, () => {
        abortedFirst = true;
        return inFlight.answered ? signal.reason : this.noAnswerError('acquire', signal);
      });
    } catch (error) {
      if (abortedFirst) throw error;
      throw this.error('acquire', `could not subscribe to release messages: ${messageOf(error)}`, error);
    }
  }

  /** The shared subscriber, created at the first wait; replaced if the client gave its connection up for good. */
  private sharedSubscriber(): ChannelSubscriber {
    this.lifecycle.assertOpen('acquire');
    if (!this.subscriber?.isUsable) this.subscriber = new ChannelSubscriber(this.client.duplicateForSubscriber());
    return this.subscriber;
  }

  /** A queued waiter must also wake in time to refresh its entry (a third of the waiter ttl). */
  private recheckDelay(retryIn: number, style: WaitStyle): number {
    const longest = style === 'none' ? this.recheckInterval : Math.min(this.recheckInterval, this.waiterTtl / 3);
    // -1: unknown (e.g. a key without expiry, not one of ours); only the re-check interval bounds the wait.
    if (retryIn < 0) return longest;
    return Math.min(Math.max(retryIn, 1), longest);
  }

  private releaseIfGranted(call: Promise<unknown>, request: AcquireRequest): void {
    this.lifecycle.track(
      call.then(
        (reply) => (parseAcquireReply(reply)?.granted ? this.releaseQuietly(request) : undefined),
        () => undefined,
      ),
    );
  }

  /** Best effort: if this fails, the lock expires after its ttl. */
  private releaseQuietly(request: AcquireRequest): Promise<unknown> {
    return runCall(
      this.client,
      releaseCall(request, this.fairness === 'fifo', request.token, this.fenceRetention),
    ).catch(() => undefined);
  }

  /** Best effort, after `after` settled (so it runs after our last acquire call): else the entry expires. */
  private leaveQuietly(
    request: AcquireRequest,
    style: WaitStyle,
    after?: Promise<unknown>,
    handoff?: HandoffTarget,
  ): void {
    // Without a grant channel we never queued (it is subscribed first).
    if (style === 'handoff' && !handoff) return;
    const call = leaveCall(request, style, this.fenceRetention, handoff);
    if (!call) return;
    const settled = (after ?? Promise.resolve()).catch(() => undefined);
    this.lifecycle.track(settled.then(() => runCall(this.client, call)).catch(() => undefined));
  }

  private async shutdown(): Promise<void> {
    const reason = this.error('acquire', 'the backend was closed while this acquire was waiting');
    // Every wait step races the aborted signal, so these settle promptly.
    await this.lifecycle.endAcquires(reason, CLEANUP_TIMEOUT_MS);
    // Only a connected client can still deliver those releases; otherwise the locks expire after their ttl.
    if ((this.client.status() ?? 'ready') === 'ready') await this.lifecycle.drain(CLEANUP_TIMEOUT_MS);
    await this.subscriber?.close();
    await this.closeOwnedClient?.();
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
    return this.error(
      operation,
      `no answer from the server before the deadline${this.connectionHint()}`,
      signal.reason,
    );
  }

  private toBackendError(operation: string, error: unknown): LockError {
    if (error instanceof LockError) return error;
    return this.error(operation, `${messageOf(error)}${this.connectionHint()}`, error);
  }

  /** What we know about the connection, for "why did it not answer" messages. */
  private connectionHint(): string {
    const hints: string[] = [];
    const status = this.client.status();
    if (status && status !== 'ready') hints.push(`connection ${status}`);
    if (this.lastConnectionError && status !== 'ready')
      hints.push(`last connection error: ${this.lastConnectionError.message}`);
    return hints.length > 0 ? ` (${hints.join('; ')})` : '';
  }

  private error(operation: string, detail: string, cause?: unknown): LockBackendError {
    return new LockBackendError(
      this.kind,
      this.address,
      operation,
      detail,
      cause === undefined ? undefined : { cause },
    );
  }
}

/** A release's grant message (see LUA_HANDOFF): 'g <token> <fencingToken> <server ms>'. */
interface HandoffMessage {
  readonly token: string;
  readonly fencingToken: bigint;
  /** The server's clock (ms) when it granted. */
  readonly grantedAt: number;
}

/** The grant in `message` if it is one for `token`. */
function parseHandoff(message: string, token: string): HandoffMessage | undefined {
  // Every waiter of the process sees every grant of the namespace: most are for others, and cheap to skip.
  if (!message.startsWith(token, 2)) return undefined;
  const parts = message.split(' ');
  if (
    parts.length !== 4 ||
    parts[0] !== 'g' ||
    parts[1] !== token ||
    !/^\d+$/.test(parts[2]) ||
    !/^\d+$/.test(parts[3])
  )
    return undefined;
  return { token: parts[1], fencingToken: BigInt(parts[2]), grantedAt: Number(parts[3]) };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
