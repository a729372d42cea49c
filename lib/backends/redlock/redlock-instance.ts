import { ChannelSubscriber } from '../redis/channel-subscriber';
import type { RedisPort } from '../redis/port/redis-port';
import { redisPortOf } from '../redis/port/redis-port-of';
import type { RedisLockClient } from '../redis/redis-client';

/** Connection states in which the client would only queue a command until the server is back (or fail it). */
const UNREACHABLE_STATES = new Set(['reconnecting', 'close', 'end']);

/** One independent Redis master of a Redlock set: the app's client plus our own subscriber, made on first use. */
export class RedlockInstance {
  readonly address: string;
  /** The app's client behind the one port the algorithm talks to. */
  readonly client: RedisPort;
  private subscriber?: ChannelSubscriber;

  constructor(readonly appClient: RedisLockClient) {
    this.client = redisPortOf(appClient, 'RedlockBackend');
    this.address = this.client.address;
  }

  /**
   * Why a request would not be answered now, or undefined. A lost connection fails this instance at once rather
   * than queueing the request (which could then take a lock long after we stopped waiting for it).
   */
  unreachable(): Error | undefined {
    const status = this.client.status();
    return status !== undefined && UNREACHABLE_STATES.has(status) ? new Error(`connection ${status}`) : undefined;
  }

  /** The client's connection status while it is not ready ('connecting', 'reconnecting', ...), else undefined. */
  connectionStatus(): string | undefined {
    const status = this.client.status();
    return status === 'ready' ? undefined : status;
  }

  /** Some waiter of this process has `channel` subscribed and confirmed here: a new listener misses nothing. */
  isSubscribed(channel: string): boolean {
    return this.subscriber?.isUsable === true && this.subscriber.isConfirmed(channel);
  }

  sharedSubscriber(): ChannelSubscriber {
    if (!this.subscriber?.isUsable) this.subscriber = new ChannelSubscriber(this.client.duplicateForSubscriber());
    return this.subscriber;
  }

  async close(): Promise<void> {
    await this.subscriber?.close();
  }
}
