import { raceAbort, timeoutSignal } from '../shared/abort';
import type { ScriptRunner } from './redis-script';

/**
 * What the backend needs from the app's client: an ioredis `Redis` or `Cluster` fits. Kept narrow so a wrapper
 * can be passed; nothing here is ever closed or modified by the backend.
 */
export interface RedisLockClient extends ScriptRunner {
  /** Read for the address in error messages (host, port or path; never the password). */
  readonly options: object;
  /** ioredis connection status, shown in error messages when the server does not answer. */
  readonly status?: string;
  /** True on an ioredis `Cluster`: its `duplicate()` takes other arguments, and pipelines must stay on one node. */
  readonly isCluster?: boolean;
  /** Cluster only: the node keys ('host:port', master first) serving each of the 16384 slots. */
  readonly slots?: readonly (readonly string[] | undefined)[];
  exists(...keys: string[]): Promise<number>;
  /** Batches many script calls into one round trip (renewals of many held locks). */
  pipeline?(): RedisPipeline;
  /**
   * Used once per backend, lazily, for the shared subscriber connection.
   * `Redis.duplicate(options)`, or `Cluster.duplicate(startupNodes, clusterOptions)`.
   */
  duplicate(...args: any[]): RedisConnection;
}

/**
 * ioredis `RedisOptions`, for a client the backend creates. Only the connection fields are spelled out; every
 * other ioredis option passes through as given (the index signature). Declared here rather than imported, so
 * that our type declarations do not need ioredis installed for an app that uses another backend.
 */
export interface RedisConnectionOptions {
  host?: string;
  port?: number;
  /** A Unix socket instead of host and port. */
  path?: string;
  username?: string;
  password?: string;
  db?: number;
  // `any`, not `unknown`: ioredis' RedisOptions is an interface, which TypeScript only matches to an `any` index.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [option: string]: any;
}

export interface RedisPipeline {
  evalsha(sha1: string, numkeys: number, ...keysAndArgs: (string | number)[]): unknown;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/** A connection the backend created itself and therefore closes. */
export interface RedisConnection {
  readonly status: string;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  on(event: string, listener: (...args: any[]) => void): unknown;
  once(event: string, listener: (...args: any[]) => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
}

/** `host:port` (or the socket path) from ioredis options; credentials are never read. */
export function describeAddress(options: object): string {
  const { host, port, path } = options as { host?: unknown; port?: unknown; path?: unknown };
  if (typeof path === 'string' && path) return path;
  const shownHost = typeof host === 'string' && host ? host : 'localhost';
  const shownPort = typeof port === 'number' || typeof port === 'string' ? String(port) : '6379';
  return shownHost.includes(':') ? `[${shownHost}]:${shownPort}` : `${shownHost}:${shownPort}`;
}

/** The address shown in errors: `host:port`, or `cluster(host:port,...)` from a Cluster's startup nodes. */
export function describeClient(client: RedisLockClient): string {
  if (!client.isCluster) return describeAddress(client.options);
  const nodes = (client as unknown as { startupNodes?: unknown }).startupNodes;
  const shown = Array.isArray(nodes) ? nodes.map(describeStartupNode) : [];
  return `cluster(${shown.join(',') || 'unknown nodes'})`;
}

/** A Cluster startup node: a port, 'host:port', a redis:// URL (its credentials dropped) or { host, port }. */
function describeStartupNode(node: unknown): string {
  if (typeof node === 'number') return describeAddress({ port: node });
  if (typeof node === 'string') {
    try {
      const url = new URL(node.includes('://') ? node : `redis://${node}`);
      return describeAddress({ host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port || '6379' });
    } catch {
      return 'unparsable node';
    }
  }
  return typeof node === 'object' && node !== null ? describeAddress(node) : String(node);
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
export function duplicateForSubscriber(client: RedisLockClient): RedisConnection {
  const connection = client.isCluster
    ? client.duplicate([], {
        redisOptions: {
          ...(client.options as { redisOptions?: object }).redisOptions,
          connectionName: SUBSCRIBER_NAME,
          enableReadyCheck: false,
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
      });
  // Its failures surface through SUBSCRIBE replies; without a listener ioredis would print each one.
  connection.on('error', () => undefined);
  return connection;
}

/** How long QUIT, then the socket close, may take before we stop waiting. */
const CLOSE_TIMEOUT_MS = 1_000;

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
