import { raceAbort, timeoutSignal } from '../../utils/abort';
import type { SubscriberConnection } from './port/redis-port';

/** close() does not wait longer than this for UNSUBSCRIBE before quitting anyway. */
const UNSUBSCRIBE_TIMEOUT_MS = 1_000;

export interface ChannelSubscription {
  /** Resolves once the server confirmed the channel: from then on no release message can be missed. */
  readonly ready: Promise<void>;
  /** Idempotent. The last subscription of a channel unsubscribes it on the server. */
  unsubscribe(): void;
  /**
   * Offers `message` to the channel's other turn-taking listeners, as if it had just arrived: for a listener
   * that took a message and then left without acting on it.
   */
  passOn(message: string): void;
}

/**
 * Gets each message's text. A turn-taking listener returns whether it took the message (see `subscribe`);
 * other listeners' return values are ignored.
 */
export type ChannelListener = (message: string) => boolean | void;

export interface SubscribeOptions {
  /**
   * Each message goes to one turn-taking listener of the channel only: the earliest subscribed one that takes
   * it (returns true). Listeners without turns get every message. Default false.
   */
  takesTurns?: boolean;
}

interface Listener {
  readonly onMessage: ChannelListener;
  readonly takesTurns: boolean;
}

interface ChannelEntry {
  /** In subscription order (a Set iterates in insertion order): turns go to the earliest. */
  readonly listeners: Set<Listener>;
  readonly ready: Promise<void>;
  /** The server confirmed the SUBSCRIBE. */
  confirmed: boolean;
}

/**
 * One subscriber connection shared by every waiter of a backend, with reference-counted channels:
 * SUBSCRIBE when a channel gets its first waiter, UNSUBSCRIBE when its last waiter leaves. One
 * connection or subscription per waiter is what exhausted Redisson users' connection pools.
 *
 * Turn-taking listeners let one release message wake one waiter of this process instead of all of them
 * (a thundering herd of retries where only one can win).
 */
export class ChannelSubscriber {
  private readonly channels = new Map<string, ChannelEntry>();
  private closed = false;
  /** A SUBSCRIBE went unconfirmed for a whole re-check interval: its connection may be gone for good. */
  private suspected = false;

  constructor(private readonly connection: SubscriberConnection) {
    connection.onMessage((channel, message) => {
      const entry = this.channels.get(channel);
      if (entry) dispatch(entry, message);
    });
  }

  /** The connection gave up for good, was closed, or is suspected dead: a new subscriber is needed for new waiters. */
  get isUsable(): boolean {
    return !this.closed && !this.suspected && this.connection.status !== 'end';
  }

  /** Marks it unusable (see `suspected`); the waiters on it go on by re-checking. */
  suspect(): void {
    this.suspected = true;
  }

  /**
   * The channel is subscribed and confirmed right now: a new subscription of it receives every message from
   * now on, without waiting for `ready`.
   */
  isConfirmed(channel: string): boolean {
    return this.channels.get(channel)?.confirmed === true;
  }

  /** `onMessage` gets each message's text (our scripts publish '*' or the owner tokens to wake). */
  subscribe(channel: string, onMessage: ChannelListener, options: SubscribeOptions = {}): ChannelSubscription {
    let entry = this.channels.get(channel);
    if (!entry) {
      const created: ChannelEntry = {
        listeners: new Set(),
        ready: this.connection.subscribe(channel).then(() => {
          created.confirmed = true;
        }),
        confirmed: false,
      };
      // A failed SUBSCRIBE must not stick: the next waiter of this channel tries again.
      created.ready.catch(() => {
        if (this.channels.get(channel) === created) this.channels.delete(channel);
      });
      this.channels.set(channel, created);
      entry = created;
    }
    const subscribed = entry;
    // A fresh object per subscription, so the same callback subscribed twice counts twice.
    const listener: Listener = { onMessage, takesTurns: options.takesTurns ?? false };
    subscribed.listeners.add(listener);
    return {
      ready: subscribed.ready,
      passOn: (message: string) => {
        if (this.channels.get(channel) === subscribed) offerTurn(subscribed, message, listener);
      },
      unsubscribe: () => {
        if (!subscribed.listeners.delete(listener) || subscribed.listeners.size > 0) return;
        if (this.channels.get(channel) !== subscribed) return;
        this.channels.delete(channel);
        // Sent after the SUBSCRIBE on the same connection, so the server sees them in order.
        if (!this.closed) this.connection.unsubscribe(channel).catch(() => undefined);
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const subscribed = [...this.channels.keys()];
    this.channels.clear();
    // QUIT would drop them too; unsubscribing first keeps PUBSUB counts right even if QUIT is slow.
    if (subscribed.length > 0 && this.connection.status === 'ready') {
      const deadline = timeoutSignal(UNSUBSCRIBE_TIMEOUT_MS, () => undefined);
      await raceAbort(this.connection.unsubscribe(...subscribed), deadline.signal, () => undefined).catch(
        () => undefined,
      );
      deadline.dispose();
    }
    await this.connection.close();
  }
}

/** Every listener without turns gets the message; of those with turns, the earliest that takes it. */
function dispatch(entry: ChannelEntry, message: string): void {
  let taken = false;
  for (const listener of entry.listeners) {
    if (!listener.takesTurns) listener.onMessage(message);
    else if (!taken) taken = listener.onMessage(message) === true;
  }
}

function offerTurn(entry: ChannelEntry, message: string, except: Listener): void {
  for (const listener of entry.listeners) {
    if (listener !== except && listener.takesTurns && listener.onMessage(message) === true) return;
  }
}
