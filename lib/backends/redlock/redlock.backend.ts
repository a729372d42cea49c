import { LockBackendError } from '../../errors/lock-backend.error';
import type { AcquireRequest, HeldLock, LockBackend, LockGrant } from '../lock-backend.interface';
import { delay, raceAbort, timeoutSignal } from '../shared/abort';
import { ClosableWaits } from '../shared/closable-waits';
import { parseAcquireReply, type AcquireReply } from '../redis/acquire.lua';
import type { ChannelSubscription } from '../redis/channel-subscriber';
import {
  acquireCall,
  channelOf,
  extendCall,
  isLockedCall,
  leaveCall,
  releaseCall,
  runCall,
  waitStyle,
  type WaitStyle,
} from '../redis/lock-calls';
import type { RedisLockClient } from '../redis/redis-client';
import { runBatch, type BatchResult } from '../redis/script-batch';
import { fenceRetentionOf } from '../redis/fence-retention';
import { DEFAULT_DRIFT_FACTOR, validityEnd } from '../redis/validity';
import { Wakeup } from '../redis/wakeup';
import { askAll, asError, majorityOf, type Answer } from './ask-all';
import { LockQuorumError, type InstanceFailure } from '../../errors/lock-quorum.error';
import { RedlockInstance } from './redlock-instance';
import { agreeOnFence } from './redlock-fencing';
import { SentCalls } from './sent-calls';

export interface RedlockBackendOptions {
  /**
   * Independent Redis masters (not replicas of one another): an odd number, 3 or 5 usually. The app owns and
   * closes them; the backend only duplicates each once for pub/sub.
   */
  clients: readonly RedisLockClient[];
  /** Share of the ttl taken off every validity for clock drift between us and the servers. Default 0.01. */
  driftFactor?: number;
  /**
   * How long in ms one instance may take to answer one request before it counts as failed. Keep it far below
   * the ttl: validity is what is left of the ttl after the round. Default 1 000 (at most half the ttl).
   */
  requestTimeout?: number;
  /** Longest sleep in ms before a waiter retries on its own when no release message arrives. Default 1 000. */
  recheckInterval?: number;
  /**
   * After a split vote (contenders each got a minority, so all released), each waits up to this many ms more,
   * at random, so they do not collide again. Default 50.
   */
  retryJitter?: number;
  /** How long in ms a waiting writer's intent (which holds new readers back) outlives its last refresh. Default 5 000. */
  waiterTtl?: number;
  /** How long in ms each instance keeps a key's fencing counter after the lock's ttl. Default 60 000 (see RedisLockBackend). */
  fenceRetention?: number;
}

const DEFAULTS = {
  driftFactor: DEFAULT_DRIFT_FACTOR,
  requestTimeout: 1_000,
  recheckInterval: 1_000,
  retryJitter: 50,
  waiterTtl: 5_000,
};
/** How long close() lets releases of abandoned grants run before closing connections. */
const CLEANUP_TIMEOUT_MS = 1_000;

/** What one round of acquire requests came to. */
type Round =
  /** `grantedBy`: the instances that granted; the others may have answered busy (and kept a writer's intent). */
  | { readonly type: 'granted'; readonly grant: LockGrant; readonly grantedBy: readonly RedlockInstance[] }
  /** `split`: we got some instances but not a majority (contenders split the vote). */
  | { readonly type: 'busy'; readonly retryIn: number; readonly split: boolean }
  | { readonly type: 'unreachable'; readonly error: LockQuorumError }
  /** A majority granted, but only after the validity had passed; released again. */
  | { readonly type: 'too-late'; readonly by: number }
  /** The signal aborted before the round was decided; `failures` includes those that had not answered. */
  | { readonly type: 'aborted'; readonly failures: InstanceFailure[] };

/**
 * The Redlock algorithm over N independent Redis masters, with the single-server backend's scripts on each:
 * a lock (exclusive, write or read) is granted when a majority of instances grant it within its validity
 * (ttl - elapsed - drift, from just before the requests of the winning round); partial grants are released at
 * once; an extension needs a majority too. Fencing tokens: see redlock-fencing.ts.
 *
 * A busy lock ends in LockTimeoutError (through the core's deadline); too few instances answering ends in
 * LockQuorumError, which names them. Semaphores are refused: a majority per holder does not bound how many
 * hold at once (with 3 instances and 2 permits, three holders can each be counted on a different two).
 */
export class RedlockBackend implements LockBackend {
  readonly kind = 'redlock';
  readonly address: string;
  readonly supports = { readWrite: true, semaphore: false, expiry: true, lockDelay: true } as const;
  /** floor(N / 2) + 1. */
  readonly quorum: number;

  private readonly instances: readonly RedlockInstance[];
  private readonly driftFactor: number;
  private readonly requestTimeout: number;
  private readonly recheckInterval: number;
  private readonly retryJitter: number;
  private readonly waiterTtl: number;
  private readonly fenceRetention: number;
  private readonly waits = new ClosableWaits();
  private readonly cleanups = new Set<Promise<unknown>>();
  private closing?: Promise<void>;

  constructor(options: RedlockBackendOptions) {
    const clients = options?.clients;
    // A typed copy: Array.isArray narrows a readonly array to any[].
    const given: unknown = clients;
    if (!Array.isArray(given) || clients.length === 0) {
      throw new TypeError(
        'RedlockBackend needs { clients: [redis1, redis2, redis3] }: ioredis or node-redis clients of independent Redis masters.',
      );
    }
    this.instances = clients.map((client) => new RedlockInstance(client));
    const addresses = this.instances.map((instance) => instance.address);
    const repeated = addresses.find((address, index) => addresses.indexOf(address) !== index);
    if (repeated || new Set(clients).size !== clients.length) {
      throw new TypeError(
        `RedlockBackend: ${repeated ?? 'a client'} is listed twice. Each client must reach its own Redis master, or a majority means nothing.`,
      );
    }
    this.address = `redlock(${addresses.join(',')})`;
    this.quorum = majorityOf(clients.length);
    this.driftFactor = positive('driftFactor', options.driftFactor ?? DEFAULTS.driftFactor, true);
    if (this.driftFactor >= 0.5)
      throw new TypeError(`RedlockBackend: driftFactor must be below 0.5, got ${this.driftFactor}.`);
    this.requestTimeout = positive('requestTimeout', options.requestTimeout ?? DEFAULTS.requestTimeout);
    this.recheckInterval = positive('recheckInterval', options.recheckInterval ?? DEFAULTS.recheckInterval);
    this.retryJitter = positive('retryJitter', options.retryJitter ?? DEFAULTS.retryJitter, true);
    this.waiterTtl = positive('waiterTtl', options.waiterTtl ?? DEFAULTS.waiterTtl);
    this.fenceRetention = fenceRetentionOf('RedlockBackend', options.fenceRetention);
  }

  async tryAcquire(request: AcquireRequest): Promise<LockGrant | null> {
    this.assertOpen('tryAcquire');
    const round = await this.round(request, 'none', 'tryAcquire');
    switch (round.type) {
      case 'granted':
        return round.grant;
      case 'unreachable':
        throw round.error;
      case 'too-late':
        throw this.error(
          'tryAcquire',
          `a majority granted ${Math.ceil(round.by)} ms after the ${request.ttl} ms lock's validity had passed`,
        );
      default:
        return null;
    }
  }

  async acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    this.assertOpen('acquire');
    if (signal.aborted) throw signal.reason;
    // close() can abort the wait too.
    return this.waits.run(signal, (own) => this.acquireOrWait(request, own));
  }

  /** Extends on every instance; the new validity needs a majority. `null` once a majority can no longer be ours. */
  async extend(lock: HeldLock, ttl: number): Promise<number | null> {
    this.assertOpen('extend');
    const call = extendCall(lock, ttl);
    const startedAt = performance.now();
    const answers = await askAll(this.instances, (instance) => runCall(instance.client, call), {
      timeout: this.requestTimeout,
      settled: (so) => this.decided(so, (reply) => reply === 1),
    });
    return this.extension(answers, startedAt, ttl);
  }

  /** One pipeline per instance for all the items, then a majority per item. */
  async extendMany(items: readonly { lock: HeldLock; ttl: number }[]): Promise<(number | null | Error)[]> {
    this.assertOpen('extend');
    const calls = items.map(({ lock, ttl }) => extendCall(lock, ttl));
    const startedAt = performance.now();
    const answers = await askAll(this.instances, (instance) => runBatch(instance.client, calls), {
      timeout: this.requestTimeout,
      settled: () => false,
    });
    return items.map(({ ttl }, index) => {
      const replies = answers.map((answer): Answer<unknown> => {
        if (!answer.ok) return answer;
        const result: BatchResult = answer.value[index];
        return result.ok
          ? { instance: answer.instance, ok: true, value: result.reply }
          : { instance: answer.instance, ok: false, error: asError(result.error) };
      });
      try {
        return this.extension(replies, startedAt, ttl);
      } catch (error) {
        return asError(error);
      }
    });
  }

  /** Releases on every instance. True when any of them still held it for us. */
  async release(lock: HeldLock): Promise<boolean> {
    this.assertOpen('release');
    // Redlock has no FIFO queues: a release only publishes.
    const call = releaseCall(lock, false);
    const answers = await askAll(this.instances, (instance) => runCall(instance.client, call), {
      timeout: this.requestTimeout,
      // The other instances' releases carry on; nothing waits for them.
      settled: (so) => so.filter((answer) => answer.ok && answer.value === 1).length >= this.quorum,
    });
    if (answers.some((answer) => answer.ok && answer.value === 1)) return true;
    this.assertQuorum('release', answers);
    return false;
  }

  /** Held when a majority says so, free when a majority says so; otherwise we cannot tell (LockQuorumError). */
  async isLocked(namespace: string, key: string): Promise<boolean> {
    this.assertOpen('isLocked');
    const call = isLockedCall(namespace, key);
    const answers = await askAll(this.instances, (instance) => runCall(instance.client, call), {
      timeout: this.requestTimeout,
      settled: (so) =>
        count(so, (reply) => reply === 1) >= this.quorum || count(so, (reply) => reply === 0) >= this.quorum,
    });
    if (count(answers, (reply) => reply === 1) >= this.quorum) return true;
    if (count(answers, (reply) => reply === 0) >= this.quorum) return false;
    if (failuresOf(answers).length > 0) throw this.quorumError('isLocked', answers);
    // Every instance answered and they split evenly (an even number of instances).
    throw this.error(
      'isLocked',
      `the instances disagree: ${count(answers, (reply) => reply === 1)} of ${this.instances.length} say it is held`,
    );
  }

  close(): Promise<void> {
    return (this.closing ??= this.shutdown());
  }

  /**
   * Rounds until a majority grants. After the first busy round: subscribe to the key's release channel on every
   * instance, then go again at once, so a release in between is not missed; afterwards sleep until a release
   * message from any instance, the holders' expiry or `recheckInterval`. A writer keeps its intent (which holds
   * new readers back) on every instance while it waits, and takes it back at the end.
   */
  private async acquireOrWait(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    const style = waitStyle(request, false);
    const wakeup = new Wakeup();
    const subscriptions: ChannelSubscription[] = [];
    const sent = new SentCalls();
    let lastProblem: LockQuorumError | undefined;
    let anyRoundDecided = false;
    let subscribed = false;
    let queued = style !== 'none';
    try {
      for (;;) {
        wakeup.reset();
        const round = await this.round(request, style, 'acquire', signal, sent);
        if (round.type === 'aborted') {
          // Before any round was decided, the instances that had not answered are the problem.
          const silent = round.failures.length > 0 ? this.quorumErrorOf('acquire', round.failures) : undefined;
          throw this.abortReason(signal, anyRoundDecided ? lastProblem : silent);
        }
        anyRoundDecided = true;
        if (round.type === 'granted') {
          queued = false;
          // A minority that answered busy holds this writer's intent, which would keep its readers out until the
          // intent expired (waiterTtl): take it back there.
          const others = sent.sentTo.filter((instance) => !round.grantedBy.includes(instance));
          if (others.length > 0) this.leaveQuietly(request, style, sent, others);
          return round.grant;
        }
        if (round.type === 'too-late') continue;
        lastProblem = round.type === 'unreachable' ? round.error : undefined;
        if (!subscribed) {
          subscribed = true;
          await this.subscribe(request, wakeup, subscriptions, signal).catch((error: unknown) => {
            throw this.abortReason(signal, lastProblem, error);
          });
          continue;
        }
        const pause = this.pause(round, style);
        await wakeup.wait(pause, signal).catch((error: unknown) => {
          throw this.abortReason(signal, lastProblem, error);
        });
      }
    } finally {
      subscriptions.forEach((subscription) => subscription.unsubscribe());
      if (queued) this.leaveQuietly(request, style, sent, sent.sentTo);
    }
  }

  /**
   * One acquire request to every instance, measured from just before it was sent. Decided as soon as a
   * majority granted or can no longer grant. Partial grants, and grants that come after the round, are released.
   */
  private async round(
    request: AcquireRequest,
    style: WaitStyle,
    operation: string,
    signal?: AbortSignal,
    sent?: SentCalls,
  ): Promise<Round> {
    const call = acquireCall(request, style, this.waiterTtl, this.fenceRetention, operation === 'acquire');
    // An instance that takes longer than half the ttl could only grant a lock with little validity left.
    const timeout = Math.max(1, Math.min(this.requestTimeout, request.ttl / 2));
    const startedAt = performance.now();
    const answers = await askAll(this.instances, (instance) => this.acquireOn(instance, call, sent), {
      timeout,
      signal,
      settled: (so) => this.decided(so, (reply) => reply.granted),
      onLate: (instance, reply) => reply.granted && this.releaseOn(instance, request),
    });
    const granted = answers.flatMap((answer) =>
      answer.ok && answer.value.granted ? [{ instance: answer.instance, token: answer.value.fencingToken }] : [],
    );
    if (signal?.aborted || granted.length < this.quorum) {
      granted.forEach(({ instance }) => this.releaseOn(instance, request));
      if (signal?.aborted) return { type: 'aborted', failures: this.failuresAndSilent(answers) };
      if (this.instances.length - this.quorum < failuresOf(answers).length) {
        return { type: 'unreachable', error: this.quorumError(operation, answers) };
      }
      const hints = answers.flatMap((answer) =>
        answer.ok && !answer.value.granted && answer.value.retryIn >= 0 ? [answer.value.retryIn] : [],
      );
      return { type: 'busy', retryIn: hints.length > 0 ? Math.min(...hints) : -1, split: granted.length > 0 };
    }
    const agreed = await agreeOnFence(request, granted, this.quorum, timeout, this.fenceRetention);
    const validUntil = validityEnd(startedAt, request.ttl, this.driftFactor);
    const now = performance.now();
    if ('failures' in agreed || validUntil <= now || signal?.aborted) {
      granted.forEach(({ instance }) => this.releaseOn(instance, request));
      if (signal?.aborted) return { type: 'aborted', failures: [] };
      if ('failures' in agreed) {
        return { type: 'unreachable', error: this.quorumErrorOf(operation, agreed.failures) };
      }
      return { type: 'too-late', by: now - validUntil };
    }
    return {
      type: 'granted',
      grant: { fencingToken: agreed.token, validUntil },
      grantedBy: granted.map(({ instance }) => instance),
    };
  }

  private async acquireOn(
    instance: RedlockInstance,
    call: ReturnType<typeof acquireCall>,
    sent?: SentCalls,
  ): Promise<AcquireReply> {
    const running = runCall(instance.client, call);
    sent?.add(instance, running);
    const reply = await running;
    const parsed = parseAcquireReply(reply);
    if (!parsed) throw new Error(`unexpected reply from the acquire script: ${JSON.stringify(reply)}`);
    return parsed;
  }

  /** The outcome is known once `success` answers reach a majority, or the other answers make that impossible. */
  private decided<T>(answers: readonly Answer<T>[], success: (value: T) => boolean): boolean {
    const won = answers.filter((answer) => answer.ok && success(answer.value)).length;
    return won >= this.quorum || answers.length - won > this.instances.length - this.quorum;
  }

  /** A majority extended: the new validity. A majority can no longer be ours: null. Otherwise a transport problem. */
  private extension(answers: readonly Answer<unknown>[], startedAt: number, ttl: number): number | null {
    if (count(answers, (reply) => reply === 1) >= this.quorum) return validityEnd(startedAt, ttl, this.driftFactor);
    if (count(answers, (reply) => reply !== 1) > this.instances.length - this.quorum) return null;
    throw this.quorumError('extend', answers);
  }

  private async subscribe(
    request: AcquireRequest,
    wakeup: Wakeup,
    subscriptions: ChannelSubscription[],
    signal: AbortSignal,
  ): Promise<void> {
    const channel = channelOf(request);
    for (const instance of this.instances) {
      if (instance.unreachable()) continue;
      subscriptions.push(instance.sharedSubscriber().subscribe(channel, wakeup.notify));
    }
    // Instances that are down never confirm; missed messages only cost a re-check, so do not wait long.
    const bound = timeoutSignal(this.requestTimeout, () => undefined);
    try {
      await raceAbort(
        Promise.allSettled(subscriptions.map((subscription) => subscription.ready)),
        bound.signal,
        () => undefined,
      ).catch(() => undefined);
    } finally {
      bound.dispose();
    }
    if (signal.aborted) throw signal.reason;
  }

  private pause(round: Round, style: WaitStyle): number {
    let longest = this.recheckInterval;
    // A writer must be back in time to refresh its intent.
    if (style !== 'none') longest = Math.min(longest, this.waiterTtl / 3);
    const retryIn = round.type === 'busy' ? round.retryIn : -1;
    const base = retryIn < 0 ? longest : Math.min(Math.max(retryIn, 1), longest);
    const split = round.type === 'busy' && round.split;
    return base + (split ? Math.random() * this.retryJitter : 0);
  }

  /**
   * What an aborted wait rejects with: close()'s own error; the quorum error when the instances were the
   * problem; otherwise the core's reason (LockTimeoutError: the lock was simply busy).
   */
  private abortReason(signal: AbortSignal, problem: LockQuorumError | undefined, fallback?: unknown): unknown {
    if (!signal.aborted) return fallback ?? problem;
    if (signal.reason instanceof LockBackendError) return signal.reason;
    return problem ?? signal.reason;
  }

  private releaseOn(instance: RedlockInstance, request: AcquireRequest): void {
    this.track(runCall(instance.client, releaseCall(request, false)).catch(() => undefined));
  }

  /**
   * Takes a writer's intent back on `instances` (those an acquire was sent to), each after every acquire sent
   * there settled. Also on an instance that is unreachable now: its acquire may still run once it reconnects
   * (ioredis resends what was in flight), and this goes behind it; if the connection is gone for good, it fails.
   */
  private leaveQuietly(
    request: AcquireRequest,
    style: WaitStyle,
    sent: SentCalls,
    instances: readonly RedlockInstance[],
  ): void {
    const call = leaveCall(request, style);
    if (!call) return;
    for (const instance of instances) {
      this.track(
        sent
          .settled(instance)
          .then(() => runCall(instance.client, call))
          .catch(() => undefined),
      );
    }
  }

  private track(cleanup: Promise<unknown>): void {
    this.cleanups.add(cleanup);
    void cleanup.finally(() => this.cleanups.delete(cleanup));
  }

  private async shutdown(): Promise<void> {
    const reason = this.error('acquire', 'the backend was closed while this acquire was waiting');
    await this.waits.abortAll(reason);
    if (this.cleanups.size > 0) {
      await delayOrSettle(Promise.allSettled(this.cleanups), CLEANUP_TIMEOUT_MS);
    }
    await Promise.allSettled(this.instances.map((instance) => instance.close()));
  }

  private failuresAndSilent(answers: readonly Answer<unknown>[]): InstanceFailure[] {
    const silent = this.instances
      .filter((instance) => !answers.some((answer) => answer.instance === instance))
      .map((instance) => ({ address: instance.address, error: new Error('no answer before the deadline') }));
    return [...failuresOf(answers), ...silent];
  }

  private assertQuorum(operation: string, answers: readonly Answer<unknown>[]): void {
    if (failuresOf(answers).length > this.instances.length - this.quorum) throw this.quorumError(operation, answers);
  }

  /** For a decided round: the instances that failed (not those we stopped waiting for). */
  private quorumError(operation: string, answers: readonly Answer<unknown>[]): LockQuorumError {
    return this.quorumErrorOf(operation, failuresOf(answers));
  }

  private quorumErrorOf(operation: string, failures: InstanceFailure[]): LockQuorumError {
    return new LockQuorumError(this.address, operation, this.quorum, this.instances.length, failures);
  }

  private assertOpen(operation: string): void {
    if (this.closing) throw this.error(operation, 'the backend is closed');
  }

  private error(operation: string, detail: string): LockBackendError {
    return new LockBackendError(this.kind, this.address, operation, detail);
  }
}

function failuresOf(answers: readonly Answer<unknown>[]): InstanceFailure[] {
  return answers.flatMap((answer) => (answer.ok ? [] : [{ address: answer.instance.address, error: answer.error }]));
}

function count(answers: readonly Answer<unknown>[], matches: (reply: unknown) => boolean): number {
  return answers.filter((answer) => answer.ok && matches(answer.value)).length;
}

function positive(name: string, value: number, zeroAllowed = false): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (!zeroAllowed && value === 0)) {
    throw new TypeError(
      `RedlockBackend: ${name} must be a ${zeroAllowed ? 'non-negative' : 'positive'} finite number, got ${String(value)}.`,
    );
  }
  return value;
}

/** Waits for `work`, but no longer than `ms`. */
async function delayOrSettle(work: Promise<unknown>, ms: number): Promise<void> {
  const bound = new AbortController();
  await Promise.race([work, delay(ms, bound.signal).catch(() => undefined)]);
  bound.abort();
}
