import { LockError } from '../../errors';
import { backendErrorOf } from '../../errors/lock-backend.error';
import { delay, raceAbort } from '../../utils/abort';
import type { ChannelSubscriber, ChannelSubscription } from '../../backends/redis/channel-subscriber';
import type { RedisPort } from '../../backends/redis/port/redis-port';
import { encodeKeyPart } from '../../backends/redis/redis-keys';
import { validityEnd } from '../../backends/redis/validity';
import { monotonicNow } from '../../utils/clock';
import { withDeadline } from '../../utils/deadline';
import { ObserveFailures } from '../observe-failures';
import type { CampaignRequest, ElectionBackend, ElectionGrant, LeaderInfo } from '../election-backend.interface';
import {
  CAMPAIGN_SCRIPT,
  type ElectionChange,
  isLater,
  parseElectionMessage,
  PROCLAIM_SCRIPT,
  READ_LEADER_SCRIPT,
  RENEW_LEADER_SCRIPT,
  RESIGN_SCRIPT,
} from './election-scripts.lua';

/** The term counter outlives the last leader by this much (the clock floor keeps terms rising after it expired). */
const FENCE_GRACE_MS = 60_000;

interface RedisElectionKeys {
  readonly leader: string;
  readonly fence: string;
  readonly channel: string;
}

interface RedisGrantState {
  readonly keys: RedisElectionKeys;
  readonly token: string;
}

function electionKeys(namespace: string, name: string): RedisElectionKeys {
  const base = `${namespace}:{${encodeKeyPart(name)}}`;
  return { leader: `${base}:leader`, fence: `${base}:fence`, channel: `${base}:changed` };
}

/**
 * Elections on one Redis server (or Cluster): one leader hash per name with a PX the leader's watchdog renews, a
 * term from the lock's fencing rule (counter with the server clock as floor), and a channel that announces every
 * change. Waiting contenders are not queued (like the Redis lock without fifo): each retries when the channel
 * says the leader changed, and at the latest when the leader's ttl runs out or the re-check interval passes,
 * since a pub/sub message can be lost on a reconnect.
 */
export class RedisElection implements ElectionBackend {
  readonly kind = 'redis';

  constructor(
    private readonly client: RedisPort,
    readonly address: string,
    /** The lock backend's one shared subscriber connection. */
    private readonly subscriber: () => ChannelSubscriber,
    private readonly recheckInterval: number,
    /** What the lock backend knows of the connection when it is not up (LockBackend.describeConnection). */
    private readonly describeConnection: () => string | undefined = () => undefined,
  ) {}

  async campaign(request: CampaignRequest, signal: AbortSignal): Promise<ElectionGrant> {
    const keys = electionKeys(request.namespace, request.name);
    let subscription: ChannelSubscription | undefined;
    let wake: (() => void) | undefined;
    try {
      for (;;) {
        if (signal.aborted) throw signal.reason;
        const startedAt = monotonicNow();
        const attempt = CAMPAIGN_SCRIPT.run(
          this.client,
          [keys.leader, keys.fence],
          [request.token, request.value, request.ttl, request.ttl + FENCE_GRACE_MS, keys.channel],
        );
        // ioredis queues commands while offline without limit: the caller's signal bounds the wait for a reply.
        const reply = await raceAbort(this.call('campaign', attempt), signal, () => signal.reason);
        const [granted, detail] = reply as [number, string | number];
        if (granted === 1) {
          const state: RedisGrantState = { keys, token: request.token };
          return { term: BigInt(detail), validUntil: validityEnd(startedAt, request.ttl), state };
        }
        // Subscribe before the next attempt, so a resign between that attempt and our wait cannot be missed.
        if (!subscription) {
          subscription = this.subscriber().subscribe(keys.channel, () => wake?.());
          await raceAbort(subscription.ready, signal, () => signal.reason);
          continue;
        }
        const leaderLeft = Number(detail);
        const wait = leaderLeft > 0 ? Math.min(leaderLeft + 1, this.recheckInterval) : this.recheckInterval;
        const woken = new Promise<void>((resolve) => (wake = resolve));
        await Promise.race([delay(wait, signal), woken]);
        if (signal.aborted) throw signal.reason;
      }
    } catch (error) {
      // A campaign call may have been granted after the abort: resign it in the background.
      if (signal.aborted)
        void RESIGN_SCRIPT.run(this.client, [keys.leader], [request.token, keys.channel]).catch(() => undefined);
      throw error;
    } finally {
      subscription?.unsubscribe();
    }
  }

  async renew(grant: ElectionGrant, ttl: number): Promise<number | null> {
    const { keys, token } = grant.state as RedisGrantState;
    const startedAt = monotonicNow();
    const renewed = await this.call(
      'renew',
      RENEW_LEADER_SCRIPT.run(this.client, [keys.leader, keys.fence], [token, ttl, ttl + FENCE_GRACE_MS]),
    );
    return renewed === 1 ? validityEnd(startedAt, ttl) : null;
  }

  async proclaim(grant: ElectionGrant, value: string): Promise<boolean> {
    const { keys, token } = grant.state as RedisGrantState;
    return (
      (await this.call('proclaim', PROCLAIM_SCRIPT.run(this.client, [keys.leader], [token, value, keys.channel]))) === 1
    );
  }

  async resign(grant: ElectionGrant): Promise<boolean> {
    const { keys, token } = grant.state as RedisGrantState;
    return (await this.call('resign', RESIGN_SCRIPT.run(this.client, [keys.leader], [token, keys.channel]))) === 1;
  }

  async leader(namespace: string, name: string): Promise<LeaderInfo | null> {
    return (await this.readLeader(electionKeys(namespace, name))).leader;
  }

  /**
   * Follows the election's channel, whose messages say what changed and where in the story (ElectionChange), so
   * every change is reported in order. Reads fill in what messages cannot tell: who leads when we start, a
   * leader whose ttl ran out (no message then), and messages lost on a reconnect (the re-check interval). The
   * channel and the reads use two connections, so a read is not ordered with the messages: a read that comes
   * back earlier in the story than what we reported is dropped, and so is a message that comes after a read had
   * already reported a later point.
   */
  watch(
    namespace: string,
    name: string,
    onChange: (leader: LeaderInfo | null) => void,
    onError: (error: unknown) => void,
    { operationTimeout = Infinity }: { readonly operationTimeout?: number } = {},
  ): () => void {
    const keys = electionKeys(namespace, name);
    const stopper = new AbortController();
    let wake: (() => void) | undefined;
    let subscription: ChannelSubscription | undefined;
    let reported: ElectionChange | undefined;
    /** Messages that moved the story, so a read knows whether one came in while it was out. */
    let heard = 0;
    const report = (change: ElectionChange) => {
      if (stopper.signal.aborted) return;
      // The same place with another value: a proclaim by a leader of an older version, which counts no steps.
      const proclaimedUncounted =
        reported?.term === change.term &&
        reported.step === change.step &&
        reported.leader?.value !== change.leader?.value;
      if (!isLater(change, reported) && !proclaimedUncounted) return;
      reported = change;
      onChange(change.leader);
    };
    const stop = () => {
      stopper.abort();
      subscription?.unsubscribe();
    };
    const follow = async () => {
      const failures = new ObserveFailures();
      try {
        subscription = this.subscriber().subscribe(keys.channel, (message) => {
          const change = parseElectionMessage(message);
          if (change) {
            heard++;
            report(change);
          }
          wake?.(); // read too: the new leader's ttl, or who leads after a message we cannot parse
        });
      } catch (error) {
        if (!stopper.signal.aborted) onError(error);
        return stop();
      }
      // The reads below start at once rather than after the subscription: their failures end the observation in
      // bounded time, while a subscriber's connection may retry for minutes (ioredis 6's backoff) with nothing
      // said. Once subscribed, it reads again, so that no change between a read and the subscription goes unheard.
      // A subscription that fails by itself ends it too, with the client's own error named through call().
      this.call(
        'observe',
        raceAbort(subscription.ready, stopper.signal, () => stopper.signal.reason),
      ).then(
        () => wake?.(),
        (error: unknown) => {
          if (stopper.signal.aborted) return;
          stop();
          onError(error);
        },
      );
      while (!stopper.signal.aborted) {
        const woken = new Promise<void>((resolve) => (wake = resolve));
        let wait = this.recheckInterval;
        try {
          const heardBefore = heard;
          // Bounded: a client with no connection queues the read until its own retries give up (minutes on
          // ioredis 6), and this observer would wait in silence meanwhile.
          const { leader, left, step } = await withDeadline(this.readLeader(keys), operationTimeout, () =>
            backendErrorOf(
              { kind: 'redis', address: this.address, describeConnection: this.describeConnection },
              'election observe',
              `no reply within ${operationTimeout} ms`,
            ),
          );
          if (stopper.signal.aborted) return;
          failures.reset();
          if (leader) report({ term: leader.term, step, leader });
          // Nobody leads: after the term we reported, unless a message came in meanwhile (a new term, maybe);
          // then the message stands, and `woken` reads again at once.
          else if (heard === heardBefore) report({ term: reported?.term ?? 0n, step: Infinity, leader: null });
          if (left > 0) wait = Math.min(left + 1, this.recheckInterval);
        } catch (error) {
          if (stopper.signal.aborted) return;
          const pause = failures.next();
          if (pause === undefined) {
            stop();
            return onError(error);
          }
          wait = pause;
        }
        await Promise.race([delay(wait, stopper.signal).catch(() => undefined), woken]);
      }
    };
    void follow();
    return stop;
  }

  async close(): Promise<void> {
    // Campaigns and observers run on LeaderElection's signals and stop functions; the subscriber is the backend's.
  }

  private async readLeader(
    keys: RedisElectionKeys,
  ): Promise<{ leader: LeaderInfo | null; left: number; step: number }> {
    const reply = (await this.call('leader', READ_LEADER_SCRIPT.run(this.client, [keys.leader], []))) as
      [string, string, number, string?] | [];
    if (reply.length === 0) return { leader: null, left: 0, step: 0 };
    return { leader: { value: reply[0], term: BigInt(reply[1]) }, left: Number(reply[2]), step: Number(reply[3] ?? 0) };
  }

  private async call<T>(operation: string, work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      if (error instanceof LockError) throw error;
      throw backendErrorOf(
        { kind: 'redis', address: this.address, describeConnection: this.describeConnection },
        `election ${operation}`,
        error instanceof Error ? error.message : String(error),
        error,
      );
    }
  }
}
