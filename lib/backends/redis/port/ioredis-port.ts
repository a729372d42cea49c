import { raceAbort, timeoutSignal } from '../../../utils/abort';
import { describeClient, type IoRedisLockClient, type RedisConnection } from '../redis-client';
import {
  normaliseReply,
  type RedisPort,
  type ScriptArgument,
  type ShaCall,
  type SubscriberConnection,
} from './redis-port';

/**
 * The port over an ioredis `Redis` or `Cluster`. ioredis takes EVALSHA as (sha, numkeys, ...keys, ...args) and
 * batches with pipeline(); a Cluster redirects by itself. Replies pass through normaliseReply, so a RESP3
 * connection (ioredis 6) gives the algorithm the same values as RESP2.
 */
export class IoRedisPort implements RedisPort {
  readonly address: string;
  readonly isCluster: boolean;
  readonly evalshaMany?: (calls: readonly ShaCall[]) => Promise<[Error | null, unknown][]>;

  constructor(readonly client: IoRedisLockClient) {
    this.address = describeClient(client);
    this.isCluster = client.isCluster === true;
    if (client.pipeline) this.evalshaMany = (calls) => this.pipelined(calls);
  }

  status(): string | undefined {
    return this.client.status;
  }

  evalsha(sha1: string, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown> {
    return this.client.evalsha(sha1, keys.length, ...keys, ...args).then(normaliseReply);
  }

  eval(source: string, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown> {
    return this.client.eval(source, keys.length, ...keys, ...args).then(normaliseReply);
  }

  nodeOfSlot(slot: number): string | undefined {
    return this.client.slots?.[slot]?.[0];
  }

  get(key: string): Promise<string | null> {
    return this.inspectCommands().get(key);
  }

  pttl(key: string): Promise<number> {
    return this.inspectCommands().pttl(key);
  }

  async zrangeWithScores(key: string): Promise<string[]> {
    // RESP3 answers [member, score] pairs; RESP2 a flat list.
    const reply = await this.inspectCommands().zrange(key, 0, -1, 'WITHSCORES');
    return reply.flatMap((item) => (Array.isArray(item) ? item.map(String) : [String(item)]));
  }

  lrange(key: string, start: number, stop: number): Promise<string[]> {
    return this.inspectCommands().lrange(key, start, stop);
  }

  async time(): Promise<[string, string]> {
    const [seconds, micros] = await this.inspectCommands().time();
    return [String(seconds), String(micros)];
  }

  duplicateForSubscriber(): SubscriberConnection {
    return new IoRedisSubscriber(duplicateIoRedis(this.client));
  }

  private async pipelined(calls: readonly ShaCall[]): Promise<[Error | null, unknown][]> {
    const pipeline = this.client.pipeline!();
    for (const { sha1, keys, args } of calls) pipeline.evalsha(sha1, keys.length, ...keys, ...args);
    const replies = await pipeline.exec();
    if (!replies) throw new Error('the pipeline was discarded');
    for (const entry of replies) if (!entry[0]) entry[1] = normaliseReply(entry[1]);
    return replies;
  }

  private inspectCommands(): IoRedisInspectCommands {
    return this.client as unknown as IoRedisInspectCommands;
  }
}

/** The commands inspect() reads with; ioredis' Redis and Cluster both have them (not part of the public type). */
interface IoRedisInspectCommands {
  get(key: string): Promise<string | null>;
  pttl(key: string): Promise<number>;
  zrange(key: string, start: number, stop: number, withScores: 'WITHSCORES'): Promise<unknown[]>;
  lrange(key: string, start: number, stop: number): Promise<string[]>;
  time(): Promise<[string | number, string | number]>;
}

class IoRedisSubscriber implements SubscriberConnection {
  constructor(private readonly connection: RedisConnection) {}

  get status(): string {
    return this.connection.status;
  }

  onMessage(listener: (channel: string, message: string) => void): void {
    this.connection.on('message', (channel: string, message: string) => listener(String(channel), String(message)));
  }

  subscribe(channel: string): Promise<unknown> {
    return this.connection.subscribe(channel);
  }

  unsubscribe(...channels: string[]): Promise<unknown> {
    return this.connection.unsubscribe(...channels);
  }

  close(): Promise<void> {
    return closeConnection(this.connection);
  }
}

/** How our subscriber connections show up in CLIENT LIST (on a Cluster ioredis adds a prefix). */
const SUBSCRIBER_NAME = 'nest-distributed-lock:subscriber';

/**
 * A new connection for pub/sub, with the app's settings (auth, TLS) and our overrides: named, so operators can
 * tell it apart in CLIENT LIST; an offline queue, so a SUBSCRIBE sent while it opens waits instead of failing;
 * and re-subscribing after a reconnect (messages in the gap are covered by the waiters' re-checks).
 * On a Cluster, ioredis subscribes through one node: a PUBLISH (also from a script) reaches every node's
 * subscribers over the cluster bus, so one subscriber hears every key's releases.
 */
function duplicateIoRedis(client: IoRedisLockClient): RedisConnection {
  const connection = client.isCluster
    ? client.duplicate([], {
        redisOptions: {
          ...(client.options as { redisOptions?: object }).redisOptions,
          connectionName: SUBSCRIBER_NAME,
          enableReadyCheck: false,
          disconnectTimeout: OWNED_DISCONNECT_TIMEOUT_MS,
        },
        enableOfflineQueue: true,
        lazyConnect: false,
      })
    : client.duplicate({
        connectionName: SUBSCRIBER_NAME,
        enableOfflineQueue: true,
        autoResubscribe: true,
        lazyConnect: false,
        // The ready check sends INFO, which a connection already in subscriber mode rejects ("only subscriber
        // commands may be used"): seen under load when a SUBSCRIBE went out first. Subscribing needs no check.
        enableReadyCheck: false,
        disconnectTimeout: OWNED_DISCONNECT_TIMEOUT_MS,
      });
  // Its failures surface through SUBSCRIBE replies; without a listener ioredis would print each one.
  connection.on('error', () => undefined);
  return connection;
}

/** How long QUIT, then the socket close, may take before we stop waiting. */
const CLOSE_TIMEOUT_MS = 1_000;

/**
 * ioredis' `disconnectTimeout` for connections we create and close: how long its disconnect() waits for the socket's
 * 'close' before destroying it. Its default (2 s) holds the process that long when the socket had already failed
 * (server unreachable), since that 'close' never comes again. closeConnection() only disconnects after QUIT was
 * answered or when the connection is not up, so there is nothing left to wait for.
 */
export const OWNED_DISCONNECT_TIMEOUT_MS = 0;

/**
 * Closes a connection we own: QUIT when it is connected (the server answers what it already received),
 * otherwise disconnect, which also stops ioredis' reconnect loop. Waits (bounded) until the socket is
 * gone, so nothing is left open. A connection between reconnect attempts has no socket and may never
 * report 'end'; clearing its reconnect timer is all it needs.
 */
export async function closeConnection(connection: RedisConnection): Promise<void> {
  if (connection.status === 'end') return;
  const deadline = timeoutSignal(CLOSE_TIMEOUT_MS, () => new Error('close timed out'));
  const ended = new Promise<void>((resolve) => connection.once('end', () => resolve()));
  try {
    if (connection.status === 'ready') {
      await raceAbort(connection.quit(), deadline.signal, () => deadline.signal.reason).catch(() => undefined);
    }
    if (connection.status !== 'end') connection.disconnect();
    if (connection.status !== 'end' && connection.status !== 'reconnecting') {
      await raceAbort(ended, deadline.signal, () => deadline.signal.reason).catch(() => undefined);
    }
  } finally {
    deadline.dispose();
  }
}
