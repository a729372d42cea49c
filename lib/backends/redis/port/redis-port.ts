/**
 * The one narrow interface the Redis lock algorithm (single server, Cluster, Redlock, elections) talks to. Two
 * small adapters implement it: ioredis-port.ts and node-redis-port.ts. Everything client-specific (argument
 * shapes, RESP3 reply types, pub/sub wiring, connection states) stays in them, so the algorithm sees the same
 * values from either client.
 */
export type ScriptArgument = string | number;

/** One EVALSHA of a pipeline: see RedisPort.evalshaMany. */
export interface ShaCall {
  readonly sha1: string;
  readonly keys: readonly string[];
  readonly args: readonly ScriptArgument[];
}

export interface RedisPort {
  /** `host:port`, a socket path or `cluster(...)`: for error messages, never with credentials. */
  readonly address: string;
  readonly isCluster: boolean;
  /**
   * The connection state in ioredis' words: 'ready'; 'connecting' or 'reconnecting' (commands wait in the
   * client's offline queue); 'end' (commands fail at once). Undefined when the client does not say.
   */
  status(): string | undefined;
  evalsha(sha1: string, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown>;
  eval(source: string, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown>;
  /**
   * Many EVALSHAs in one round trip, each answered with its own error or reply (normalised). Rejects when
   * the round trip as a whole failed. Absent when the client cannot batch: calls then go one by one.
   */
  evalshaMany?(calls: readonly ShaCall[]): Promise<[Error | null, unknown][]>;
  /** Cluster: the node key ('host:port') of the master serving `slot`, as far as the client knows. */
  nodeOfSlot(slot: number): string | undefined;
  get(key: string): Promise<string | null>;
  pttl(key: string): Promise<number>;
  /** ZRANGE key 0 -1 WITHSCORES, flat: member, score, member, score... (scores as text). */
  zrangeWithScores(key: string): Promise<string[]>;
  lrange(key: string, start: number, stop: number): Promise<string[]>;
  /** The server's TIME: [seconds, microseconds] as text. */
  time(): Promise<[string, string]>;
  /** A new connection for pub/sub with the client's settings; the caller owns (and closes) it. */
  duplicateForSubscriber(): SubscriberConnection;
}

/** A pub/sub connection we created and therefore close. */
export interface SubscriberConnection {
  /** 'end' once it is closed or gave up for good: a new one is needed. */
  readonly status: string;
  /** Every message of every channel subscribed on this connection. Set once, before the first subscribe. */
  onMessage(listener: (channel: string, message: string) => void): void;
  /** Resolves once the server confirmed the subscription. */
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  /** Bounded: QUIT (or its equivalent) when connected, then the socket is dropped. */
  close(): Promise<void>;
}

/**
 * The same values from RESP2 and RESP3 connections: a Lua `true` reaches a RESP3 client as a boolean (RESP2:
 * the integer 1) and `false` as a boolean (RESP2: nil); a RESP3 double or big number becomes a number, a
 * Buffer a string. Arrays are normalised item by item. Scalars of RESP2 pass through untouched.
 */
export function normaliseReply(reply: unknown): unknown {
  if (reply === null || typeof reply === 'string' || typeof reply === 'number') return reply;
  if (reply === true) return 1;
  if (reply === false || reply === undefined) return null;
  if (typeof reply === 'bigint') return Number(reply);
  if (Array.isArray(reply)) {
    let copy: unknown[] | undefined;
    for (let index = 0; index < reply.length; index++) {
      const item = reply[index] as unknown;
      const normal = normaliseReply(item);
      if (normal !== item) (copy ??= reply.slice())[index] = normal;
    }
    return copy ?? reply;
  }
  if (Buffer.isBuffer(reply)) return reply.toString('utf8');
  return reply;
}
