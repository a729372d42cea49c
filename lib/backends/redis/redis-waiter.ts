import type { AcquireRequest, LockGrant } from '../lock-backend.interface';
import { LockTimeoutError } from '../../errors';
import { raceAbort } from '../../utils/abort';
import type { ChannelSubscriber, ChannelSubscription } from './channel-subscriber';
import { channelOf, kindOf, leaveCall, runCall, waitStyle, type HandoffTarget, type WaitStyle } from './lock-calls';
import { messageOf, type BusyAttempt, type InFlight, type RedisCommands } from './redis-commands';
import { handoffValidityEnd } from './validity';
import { Wakeup } from './wakeup';

/**
 * One acquire that may wait, on the backend's shared subscriber connection.
 *
 * One attempt first, so an uncontended acquire is a single round trip. When busy, that attempt already
 * registered how we wait (a FIFO entry, or a writer's intent). Then subscribe to the key's release channel,
 * and only then try again, so a release between the two attempts cannot be missed. When another waiter of
 * this process already has the channel subscribed, we subscribe before the first attempt instead, and that
 * attempt is the only one. Then sleep until a release message for us (or, handoff style, the grant itself),
 * the holder's expiry, our entry's refresh time or `recheckInterval`, and retry.
 * Whatever ends the wait without a grant takes our entry back (after the last call settled).
 */
export class RedisWaiter {
  constructor(
    private readonly commands: RedisCommands,
    private readonly subscriber: ChannelSubscriber,
    /** Names this backend's grant channels: see RedisLockBackend.handoffId. */
    private readonly handoffId: string,
    private readonly request: AcquireRequest,
    private readonly signal: AbortSignal,
  ) {}

  async acquire(): Promise<LockGrant> {
    const { request, signal, subscriber } = this;
    const style = waitStyle(request, this.commands.fifo);
    const inFlight: InFlight = {};
    let queued = style !== 'none';
    // A release granted us the lock (handoff style): its message, not yet acted on.
    let handed: HandoffMessage | undefined;
    const wakeup = new Wakeup();
    const takesTurns = this.takesTurns(request);
    const channel = channelOf(request);
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
          check: !this.commands.client.isCluster,
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
      const first = await this.commands.attempt(request, 'acquire', style, signal, inFlight, handoff);
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
        const outcome = await this.commands.attempt(request, 'acquire', style, signal, inFlight, handoff);
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
    } catch (error) {
      throw this.unreachableAtDeadline(error);
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
   * A wait that reached its deadline while the connection was down ends with a LockBackendError, not with "busy":
   * the server answered an earlier attempt, but whether the key is still held is unknown (the server died or
   * restarted meanwhile). A LockTimeoutError says the server answered.
   */
  private unreachableAtDeadline(error: unknown): unknown {
    if (error !== this.signal.reason || !(error instanceof LockTimeoutError)) return error;
    if (this.commands.connectionState() === undefined) return error;
    return this.commands.noAnswerError('acquire', this.signal);
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
    this.commands.lifecycle.track(this.commands.releaseQuietly(request));
    return undefined;
  }

  /**
   * Without FIFO, a release message ('*') wakes one exclusive waiter (or semaphore waiter) per process: the
   * earliest still waiting here, since only one can win the freed lock or permit; if it loses to another
   * process, that one's release wakes it again. Readers all wake: they can all enter together. FIFO waiters
   * all see every message and pick out their own token. The re-check timers still bound every wait.
   */
  private takesTurns(request: AcquireRequest): boolean {
    return !this.commands.fifo && kindOf(request) !== 'read';
  }

  /** FIFO waiters only wake for messages naming them (or '*'); others wake on every release. */
  private wakes(message: string, request: AcquireRequest): boolean {
    return !this.commands.fifo || message === '*' || message.split(' ').includes(request.token);
  }

  /**
   * Waits for the server to confirm a SUBSCRIBE, at most a re-check interval: a subscriber connection whose node
   * died can leave it unanswered for good (a node-redis cluster does not move it), and the wait then goes on by
   * re-checking, as after a lost message. Such a subscriber is replaced for the waits that come next.
   */
  private async subscribed(subscription: ChannelSubscription, signal: AbortSignal, inFlight: InFlight): Promise<void> {
    let abortedFirst = false;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), this.commands.tuning.recheckInterval);
      timer.unref?.();
    });
    try {
      const outcome = await raceAbort(Promise.race([subscription.ready, late]), signal, () => {
        abortedFirst = true;
        return inFlight.answered ? signal.reason : this.commands.noAnswerError('acquire', signal);
      });
      if (outcome === 'late') this.subscriber.suspect();
    } catch (error) {
      if (abortedFirst) throw error;
      throw this.commands.error('acquire', `could not subscribe to release messages: ${messageOf(error)}`, error);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A queued waiter must also wake in time to refresh its entry (a third of the waiter ttl). */
  private recheckDelay(retryIn: number, style: WaitStyle): number {
    const longest =
      style === 'none'
        ? this.commands.tuning.recheckInterval
        : Math.min(this.commands.tuning.recheckInterval, this.commands.tuning.waiterTtl / 3);
    // -1: unknown (e.g. a key without expiry, not one of ours); only the re-check interval bounds the wait.
    if (retryIn < 0) return longest;
    return Math.min(Math.max(retryIn, 1), longest);
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
    const call = leaveCall(request, style, this.commands.tuning.fenceRetention, handoff);
    if (!call) return;
    const settled = (after ?? Promise.resolve()).catch(() => undefined);
    this.commands.lifecycle.track(settled.then(() => runCall(this.commands.client, call)).catch(() => undefined));
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
