import type { AcquireRequest, HeldLock, LockBackend, LockGrant } from '../lock-backend.interface';
import { extendCall, isLockedCall, runCall } from '../redis/lock-calls';
import { runBatch, type BatchResult } from '../redis/script-batch';
import { askAll, asError, type Answer } from './ask-all';
import { redlockReleaseCall } from './redlock-calls';
import type { RedlockBackendOptions } from './redlock-options';
import { acquireRound } from './redlock-round';
import { count, failuresOf, REDLOCK_KIND, RedlockSet } from './redlock-set';
import { settledWithin } from '../shared/backend-lifecycle';
import { RedlockWaiter } from './redlock-waiter';
import { checkOptionNames, optionNames } from '../../utils/validate';

export type { RedlockBackendOptions } from './redlock-options';

/** How long close() lets releases of abandoned grants run before closing connections. */
const CLEANUP_TIMEOUT_MS = 1_000;

const REDLOCK_OPTIONS = optionNames<RedlockBackendOptions>({
  clients: true,
  driftFactor: true,
  requestTimeout: true,
  recheckInterval: true,
  retryJitter: true,
  waiterTtl: true,
  fenceRetention: true,
});

/**
 * The Redlock algorithm over N independent Redis masters: a lock (exclusive, write or read) is granted when a
 * majority of instances grant it within its validity (ttl - elapsed - drift, from just before the requests of
 * the winning round); partial grants are released at once; an extension needs a majority too. Fencing tokens:
 * see redlock-fencing.ts. Waiting: see redlock-waiter.ts (a release wakes one waiter, not all of them).
 *
 * A busy lock ends in LockTimeoutError (through the core's deadline); too few instances answering ends in
 * LockQuorumError, which names them. Semaphores are refused: a majority per holder does not bound how many
 * hold at once (with 3 instances and 2 permits, three holders can each be counted on a different two).
 */
export class RedlockBackend implements LockBackend {
  readonly kind = REDLOCK_KIND;
  readonly address: string;
  readonly supports = { readWrite: true, semaphore: false, expiry: true, lockDelay: true } as const;
  /** floor(N / 2) + 1. */
  readonly quorum: number;

  private readonly set: RedlockSet;

  constructor(options: RedlockBackendOptions) {
    checkOptionNames(options, REDLOCK_OPTIONS, 'RedlockBackend options', '{ clients: [redis1, redis2, redis3] }');
    this.set = new RedlockSet(options);
    this.address = this.set.address;
    this.quorum = this.set.quorum;
  }

  async tryAcquire(request: AcquireRequest): Promise<LockGrant | null> {
    this.set.lifecycle.assertOpen('tryAcquire');
    const { round, cleanup } = await acquireRound(this.set, request, { operation: 'tryAcquire' });
    switch (round.type) {
      case 'granted':
        return round.grant;
      case 'unreachable':
        await settledWithin(cleanup, this.set.settings.requestTimeout, true);
        throw round.error;
      default:
        // A partial grant, or one that came after its validity ('too-late'), is given back before the caller hears
        // "busy" (docs/options.md, ttl).
        await settledWithin(cleanup, this.set.settings.requestTimeout, true);
        return null;
    }
  }

  /** The instances whose connection is not ready, with its status; undefined when all are. */
  describeConnection(): string | undefined {
    const down = this.set.instances.flatMap((instance) => {
      const status = instance.connectionStatus();
      return status ? [`${instance.address} connection ${status}`] : [];
    });
    return down.length > 0 ? down.join('; ') : undefined;
  }

  async acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    this.set.lifecycle.assertOpen('acquire');
    if (signal.aborted) throw signal.reason;
    // close() can abort the wait too.
    return this.set.lifecycle.wait(signal, (own) => new RedlockWaiter(this.set, request, own).acquire());
  }

  /** Extends on every instance; the new validity needs a majority. `null` once a majority can no longer be ours. */
  async extend(lock: HeldLock, ttl: number): Promise<number | null> {
    this.set.lifecycle.assertOpen('extend');
    const call = extendCall(lock, ttl);
    const startedAt = performance.now();
    const answers = await askAll(this.set.instances, (instance) => runCall(instance.client, call), {
      timeout: this.set.settings.requestTimeout,
      settled: (so) => this.set.decided(so, (reply) => reply === 1),
    });
    return this.set.extension(answers, startedAt, ttl);
  }

  /** One pipeline per instance for all the items, then a majority per item. */
  async extendMany(items: readonly { lock: HeldLock; ttl: number }[]): Promise<(number | null | Error)[]> {
    this.set.lifecycle.assertOpen('extend');
    const calls = items.map(({ lock, ttl }) => extendCall(lock, ttl));
    const startedAt = performance.now();
    const answers = await askAll(this.set.instances, (instance) => runBatch(instance.client, calls), {
      timeout: this.set.settings.requestTimeout,
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
        return this.set.extension(replies, startedAt, ttl);
      } catch (error) {
        return asError(error);
      }
    });
  }

  /** Releases on every instance (each wakes the head of its line). True when any of them still held it for us. */
  async release(lock: HeldLock): Promise<boolean> {
    this.set.lifecycle.assertOpen('release');
    const call = redlockReleaseCall(lock);
    const answers = await askAll(this.set.instances, (instance) => runCall(instance.client, call), {
      timeout: this.set.settings.requestTimeout,
      // The other instances' releases carry on; nothing waits for them.
      settled: (so) => so.filter((answer) => answer.ok && answer.value === 1).length >= this.quorum,
    });
    // Ours only if a majority still held it: a key left on a minority (a late request of the winning round) is
    // deleted too, but the lock had already passed on.
    if (answers.filter((answer) => answer.ok && answer.value === 1).length >= this.quorum) return true;
    if (answers.some((answer) => answer.ok && answer.value === 1)) return false;
    this.set.assertQuorum('release', answers);
    return false;
  }

  /** Held when a majority says so, free when a majority says so; otherwise we cannot tell (LockQuorumError). */
  async isLocked(namespace: string, key: string): Promise<boolean> {
    this.set.lifecycle.assertOpen('isLocked');
    const call = isLockedCall(namespace, key);
    const answers = await askAll(this.set.instances, (instance) => runCall(instance.client, call), {
      timeout: this.set.settings.requestTimeout,
      settled: (so) =>
        count(so, (reply) => reply === 1) >= this.quorum || count(so, (reply) => reply === 0) >= this.quorum,
    });
    if (count(answers, (reply) => reply === 1) >= this.quorum) return true;
    if (count(answers, (reply) => reply === 0) >= this.quorum) return false;
    if (failuresOf(answers).length > 0) throw this.set.quorumError('isLocked', answers);
    // Every instance answered and they split evenly (an even number of instances).
    throw this.set.error(
      'isLocked',
      `the instances disagree: ${count(answers, (reply) => reply === 1)} of ${this.set.instances.length} say it is held`,
    );
  }

  close(): Promise<void> {
    return this.set.lifecycle.close(() => this.shutdown());
  }

  private async shutdown(): Promise<void> {
    const reason = this.set.error('acquire', 'the backend was closed while this acquire was waiting');
    await this.set.lifecycle.endAcquires(reason, CLEANUP_TIMEOUT_MS);
    await this.set.lifecycle.drain(CLEANUP_TIMEOUT_MS);
    await this.set.close();
  }
}
