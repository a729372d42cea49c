import { ChannelSubscriber } from '../redis/channel-subscriber';
import { describeClient, duplicateForSubscriber, type RedisLockClient } from '../redis/redis-client';

/** Connection states in which ioredis would only queue a command until the server is back. */
const UNREACHABLE_STATES = new Set(['reconnecting', 'close', 'end']);

/** One independent Redis master of a Redlock set: the app's client plus our own subscriber, made on first use. */
export class RedlockInstance {
  readonly address: string;
  private subscriber?: ChannelSubscriber;

  constructor(readonly client: RedisLockClient) {
    this.address = describeClient(client);
  }

  /**
   * Why a request would not be answered now, or undefined. A lost connection fails this instance at once rather
   * than queueing the request (which could then take a lock long after we stopped waiting for it).
   */
  unreachable(): Error | undefined {
    const status = this.client.status;
    return status !== undefined && UNREACHABLE_STATES.has(status) ? new Error(`connection ${status}`) : undefined;
  }

  sharedSubscriber(): ChannelSubscriber {
    if (!this.subscriber?.isUsable) this.subscriber = new ChannelSubscriber(duplicateForSubscriber(this.client));
    return this.subscriber;
  }

  async close(): Promise<void> {
    await this.subscriber?.close();
  }
}
