import { LockBackendError } from '../../errors/lock-backend.error';
import type { LockQuorumError } from '../../errors/lock-quorum.error';
import type { AcquireRequest, LockGrant } from '../lock-backend.interface';
import { raceAbort, timeoutSignal } from '../../utils/abort';
import type { ChannelSubscription } from '../redis/channel-subscriber';
import { Wakeup } from '../redis/wakeup';
import { redlockKeys, redlockLeaveCall, type WaiterTicket } from './redlock-calls';
import type { RedlockInstance } from './redlock-instance';
import { acquireRound, type Round } from './redlock-round';
import type { RedlockSet } from './redlock-set';
import { settledWithin } from '../shared/backend-lifecycle';
import { SentCalls } from './sent-calls';

/** Longest a failed acquire waits for its clean-up before it rejects (the core allows an aborted wait 1 s). */
const CLEANUP_WAIT_MS = 300;

/** How long a waiter woken by a minority of instances waits for the others' wake before it goes anyway. */
const STRAGGLER_WAIT_MS = 10;

/**
 * One acquire() that waits: rounds until a majority grants.
 *
 * A busy instance keeps the waiter's entry in the key's line there (LUA_REDLOCK_WAITERS), and a release wakes
 * only the head of that line, by publishing its token; every other waiter stays quiet. After the first busy
 * round the waiter subscribes to the key's channel on every instance and goes again at once, so a release in
 * between is not missed (when another waiter of this process already listens on every instance, it listens
 * from before its first round instead, and that round is its only one before it sleeps); afterwards it sleeps
 * until a message names it, the holder's expiry, or the re-check (which also refreshes its entry), whichever
 * comes first. A wait is thus bounded even when the message is lost or the woken head died: its entry expires,
 * and every waiter re-checks on its own.
 *
 * A round it loses gives back what it got and keeps its place; a split vote retries after a short jitter.
 * When it ends without a grant, it takes its entry back on every instance it reached, after every call it sent
 * there, and waits for that (bounded), so a failed acquire leaves nothing behind that outlives it.
 */
export class RedlockWaiter {
  private readonly wakeup = new Wakeup();
  private readonly sent = new SentCalls();
  private readonly subscriptions: ChannelSubscription[] = [];
  private readonly ticket: WaiterTicket;
  private lastProblem: LockQuorumError | undefined;
  /** The instances whose release named us since the last round began. */
  private readonly wokenBy = new Set<RedlockInstance>();
  private straggler?: NodeJS.Timeout;

  constructor(
    private readonly set: RedlockSet,
    private readonly request: AcquireRequest,
    private readonly signal: AbortSignal,
  ) {
    this.ticket = { ticket: Date.now(), waiterTtl: set.settings.waiterTtl };
  }

  async acquire(): Promise<LockGrant> {
    let anyRoundDecided = false;
    let subscribed = false;
    let grantedBy: readonly RedlockInstance[] | undefined;
    try {
      // Another waiter of this process already listens on every instance: listen from before the first round,
      // so that round is the only one before we sleep (a release after it cannot be missed).
      const channel = this.channel();
      if (this.set.instances.every((instance) => instance.isSubscribed(channel))) {
        this.listen();
        subscribed = true;
      }
      for (;;) {
        this.wakeup.reset();
        this.wokenBy.clear();
        clearTimeout(this.straggler);
        this.straggler = undefined;
        const { round } = await acquireRound(this.set, this.request, {
          operation: 'acquire',
          signal: this.signal,
          sent: this.sent,
          waiter: this.ticket,
        });
        if (round.type === 'aborted') {
          // Before any round was decided, the instances that had not answered are the problem, if they are too many
          // for a majority to have answered; when a majority did, the key was simply busy (LockTimeoutError).
          const tooFew = round.failures.length > this.set.instances.length - this.set.quorum;
          const silent = tooFew ? this.set.quorumErrorOf('acquire', round.failures) : undefined;
          throw this.abortReason(anyRoundDecided ? this.lastProblem : silent);
        }
        anyRoundDecided = true;
        if (round.type === 'granted') {
          grantedBy = round.grantedBy;
          return round.grant;
        }
        if (round.type === 'too-late') continue;
        this.lastProblem = round.type === 'unreachable' ? round.error : undefined;
        if (!subscribed) {
          subscribed = true;
          await this.subscribe().catch((error: unknown) => {
            throw this.abortReason(this.lastProblem, error);
          });
          continue;
        }
        await this.wakeup.wait(this.pause(round), this.signal).catch((error: unknown) => {
          throw this.abortReason(this.lastProblem, error);
        });
      }
    } finally {
      clearTimeout(this.straggler);
      this.subscriptions.forEach((subscription) => subscription.unsubscribe());
      // Granted: the instances that granted took the entry back themselves; the rest still hold it, which
      // would hold their readers back (or be woken for nothing) until it expired.
      const left = this.leave(this.sent.sentTo.filter((instance) => !grantedBy?.includes(instance)));
      // Not granted: the caller learns of the failure once nothing of this waiter is left on the instances that
      // answer; briefly, as the core gives an aborted wait little time. The others get it when they are back
      // (ioredis resends), else the entries expire after waiterTtl.
      if (!grantedBy) {
        const reachable = [...left].filter(([instance]) => !instance.unreachable()).map(([, done]) => done);
        await settledWithin(Promise.all(reachable), Math.min(this.set.settings.requestTimeout, CLEANUP_WAIT_MS), true);
      }
    }
  }

  /** Takes the entry back on `instances`, each after every call this waiter sent there settled. */
  private leave(instances: readonly RedlockInstance[]): Map<RedlockInstance, Promise<void>> {
    const call = redlockLeaveCall(this.request);
    return new Map(
      instances.map((instance) => [
        instance,
        this.set.track(this.sent.settled(instance).then(() => this.set.cleanUp(instance, call))),
      ]),
    );
  }

  private channel(): string {
    return redlockKeys(this.request.namespace, this.request.key).channel;
  }

  /** Listens on the key's channel of every reachable instance; see subscribe() for waiting until confirmed. */
  private listen(): void {
    const channel = this.channel();
    const token = this.request.token;
    for (const instance of this.set.instances) {
      if (instance.unreachable()) continue;
      // Only a message naming us ('*' too: other versions' scripts) is ours; the rest wakes other waiters.
      const onMessage = (message: string) => {
        if (message === '*' || message === token || message.split(' ').includes(token)) this.wokenOn(instance);
      };
      this.subscriptions.push(instance.sharedSubscriber().subscribe(channel, onMessage));
    }
  }

  private async subscribe(): Promise<void> {
    this.listen();
    // Instances that are down never confirm; missed messages only cost a re-check, so do not wait long.
    const bound = timeoutSignal(this.set.settings.requestTimeout, () => undefined);
    try {
      await raceAbort(
        Promise.allSettled(this.subscriptions.map((subscription) => subscription.ready)),
        bound.signal,
        () => undefined,
      ).catch(() => undefined);
    } finally {
      bound.dispose();
    }
    if (this.signal.aborted) throw this.signal.reason;
  }

  /**
   * A release reaches the instances one by one, and each wakes us: going at the first message would often find
   * the others still held (a split vote, given back, retried). So go once a majority woke us, or shortly after
   * the first wake if no majority does (we are not the head everywhere, a message was lost).
   */
  private wokenOn(instance: RedlockInstance): void {
    this.wokenBy.add(instance);
    if (this.wokenBy.size >= this.set.quorum) {
      clearTimeout(this.straggler);
      this.wakeup.notify();
    } else if (!this.straggler) {
      this.straggler = setTimeout(this.wakeup.notify, STRAGGLER_WAIT_MS);
      this.straggler.unref?.();
    }
  }

  private pause(round: Round): number {
    const { recheckInterval, waiterTtl, retryJitter } = this.set.settings;
    // Contenders that split the vote all gave their share back: nobody will publish, so retry soon, apart.
    if (round.type === 'busy' && round.split) return 1 + Math.random() * retryJitter;
    // Back in time to refresh the entry, which also re-checks in case a wake message was lost.
    const longest = Math.min(recheckInterval, waiterTtl / 3);
    const retryIn = round.type === 'busy' ? round.retryIn : -1;
    return retryIn < 0 ? longest : Math.min(Math.max(retryIn, 1), longest);
  }

  /**
   * What an aborted wait rejects with: close()'s own error; the quorum error when the instances were the
   * problem; otherwise the core's reason (LockTimeoutError: the lock was simply busy).
   */
  private abortReason(problem: LockQuorumError | undefined, fallback?: unknown): unknown {
    if (!this.signal.aborted) return fallback ?? problem;
    if (this.signal.reason instanceof LockBackendError) return this.signal.reason;
    return problem ?? this.signal.reason;
  }
}
