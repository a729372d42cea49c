import { LockBackendError } from '../../errors/lock-backend.error';
import { LockQuorumError, type InstanceFailure } from '../../errors/lock-quorum.error';
import { BackendLifecycle } from '../shared/backend-lifecycle';
import { runCall, type ScriptCall } from '../redis/lock-calls';
import type { RedisLockClient } from '../redis/redis-client';
import { validityEnd } from '../redis/validity';
import { majorityOf, type Answer } from './ask-all';
import { redlockSettings, type RedlockBackendOptions, type RedlockSettings } from './redlock-options';
import { RedlockInstance } from './redlock-instance';
import type { SentCalls } from './sent-calls';

export const REDLOCK_KIND = 'redlock';

/**
 * The instances of one RedlockBackend and what every operation on them shares: the majority, the verdicts on a
 * set of answers, the errors that name the instances, and the clean-ups (releases of grants nobody holds,
 * waiters' entries taken back) that run on after their operation, which close() lets finish.
 */
export class RedlockSet {
  readonly instances: readonly RedlockInstance[];
  /** floor(N / 2) + 1. */
  readonly quorum: number;
  readonly address: string;
  readonly settings: RedlockSettings;
  /** Closed or open, the waits close() aborts, and the clean-ups it lets finish. */
  readonly lifecycle: BackendLifecycle;

  constructor(options: RedlockBackendOptions) {
    const clients: readonly RedisLockClient[] = options?.clients;
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
    this.lifecycle = new BackendLifecycle(REDLOCK_KIND, this.address);
    this.quorum = majorityOf(clients.length);
    this.settings = redlockSettings(options);
  }

  /** The outcome is known once `success` answers reach a majority, or the other answers make that impossible. */
  decided<T>(answers: readonly Answer<T>[], success: (value: T) => boolean): boolean {
    const won = answers.filter((answer) => answer.ok && success(answer.value)).length;
    return won >= this.quorum || answers.length - won > this.instances.length - this.quorum;
  }

  /**
   * As decided(), for an acquire round, which must also tell a busy key from an outage: it is busy only once a
   * majority answered. A round where one instance answered "busy" and the rest are silent waits for them to answer
   * or time out, so a silent majority ends as a quorum failure, not as a key that looks held.
   */
  acquireDecided<T>(answers: readonly Answer<T>[], granted: (value: T) => boolean): boolean {
    const won = answers.filter((answer) => answer.ok && granted(answer.value)).length;
    if (won >= this.quorum) return true;
    const room = this.instances.length - this.quorum;
    if (failuresOf(answers).length > room) return true;
    const answered = answers.filter((answer) => answer.ok).length;
    return answered >= this.quorum && answers.length - won > room;
  }

  /** A majority extended: the new validity. A majority can no longer be ours: null. Otherwise a transport problem. */
  extension(answers: readonly Answer<unknown>[], startedAt: number, ttl: number): number | null {
    if (count(answers, (reply) => reply === 1) >= this.quorum) {
      return validityEnd(startedAt, ttl, this.settings.driftFactor);
    }
    if (count(answers, (reply) => reply !== 1) > this.instances.length - this.quorum) return null;
    throw this.quorumError('extend', answers);
  }

  /**
   * Runs `call` on `instance` as a clean-up: never rejects, close() waits for it (briefly), and `sent` orders
   * later clean-ups of the same waiter behind it.
   */
  cleanUp(instance: RedlockInstance, call: ScriptCall, sent?: SentCalls): Promise<void> {
    const running = runCall(instance.client, call);
    sent?.add(instance, running);
    return this.track(running);
  }

  track(work: Promise<unknown>): Promise<void> {
    const cleanup = work.then(
      () => undefined,
      () => undefined,
    );
    this.lifecycle.track(cleanup);
    return cleanup;
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.instances.map((instance) => instance.close()));
  }

  /** Every instance that did not answer (yet) counts as failed: for a round cut short by an abort. */
  failuresAndSilent(answers: readonly Answer<unknown>[]): InstanceFailure[] {
    const silent = this.instances
      .filter((instance) => !answers.some((answer) => answer.instance === instance))
      .map((instance) => ({ address: instance.address, error: new Error('no answer before the deadline') }));
    return [...failuresOf(answers), ...silent];
  }

  assertQuorum(operation: string, answers: readonly Answer<unknown>[]): void {
    if (failuresOf(answers).length > this.instances.length - this.quorum) throw this.quorumError(operation, answers);
  }

  /** For a decided round: the instances that failed (not those we stopped waiting for). */
  quorumError(operation: string, answers: readonly Answer<unknown>[]): LockQuorumError {
    return this.quorumErrorOf(operation, failuresOf(answers));
  }

  quorumErrorOf(operation: string, failures: InstanceFailure[]): LockQuorumError {
    return new LockQuorumError(this.address, operation, this.quorum, this.instances.length, failures);
  }

  error(operation: string, detail: string): LockBackendError {
    return new LockBackendError(REDLOCK_KIND, this.address, operation, detail);
  }
}

export function failuresOf(answers: readonly Answer<unknown>[]): InstanceFailure[] {
  return answers.flatMap((answer) => (answer.ok ? [] : [{ address: answer.instance.address, error: answer.error }]));
}

export function count(answers: readonly Answer<unknown>[], matches: (reply: unknown) => boolean): number {
  return answers.filter((answer) => answer.ok && matches(answer.value)).length;
}
