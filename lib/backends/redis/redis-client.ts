import type { ScriptRunner } from './redis-script';

/**
 * The app's Redis client: ioredis (`Redis`, `Cluster`) or node-redis (`createClient()`, `createCluster()`). Told
 * apart by shape, never by importing either package. Nothing here is ever closed or modified by the backend.
 */
export type RedisLockClient = IoRedisLockClient | NodeRedisLockClient | NodeRedisClusterLockClient;

/**
 * What the backend needs from an ioredis client: a `Redis` or `Cluster` fits. Kept narrow so a wrapper
 * can be passed.
 */
export interface IoRedisLockClient extends ScriptRunner {
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
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the clients' own signatures; unknown[] would reject ioredis's and node-redis's methods
  duplicate(...args: any[]): RedisConnection;
}

/**
 * What the backend needs from a node-redis client (`createClient()` of `redis` 5 or 6, RESP 2 or 3). The app
 * connects it (`await client.connect()`); the backend duplicates it once for pub/sub and closes only that copy.
 */
export interface NodeRedisLockClient {
  /** True from connect() until the client is closed. */
  readonly isOpen: boolean;
  /** True while connected and ready for commands (false while it reconnects). */
  readonly isReady: boolean;
  /** Read for the address in error messages (`socket.host`/`port`/`path`; never the password). */
  readonly options?: object;
  // `any`: node-redis' own argument and option types, which we must not import.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  sendCommand(args: readonly string[], options?: any): Promise<unknown>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  duplicate(overrides?: any): unknown;
}

/**
 * What the backend needs from a node-redis cluster client (`createCluster()` of `redis` 5 or 6, RESP 2 or 3). The
 * app connects it (`await cluster.connect()`); commands sent while it still discovers the slots wait for that. The
 * backend duplicates it once for pub/sub (`minimizeConnections`: one connection) and closes only that copy.
 */
export interface NodeRedisClusterLockClient {
  /** True from connect() until the cluster is closed. */
  readonly isOpen: boolean;
  /** The masters as last discovered (empty until connect() has read the slots). */
  readonly masters: readonly object[];
  /** Routed by node-redis to the master of `firstKey`'s slot (MOVED/ASK followed). */
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  /** Used once per backend, lazily, for the shared subscriber (`minimizeConnections`: one connection). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  duplicate(overrides?: any): unknown;
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
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the clients' own signatures; unknown[] would reject ioredis's and node-redis's methods
  on(event: string, listener: (...args: any[]) => void): unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the clients' own signatures; unknown[] would reject ioredis's and node-redis's methods
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

/**
 * The address shown in errors: `host:port`; `cluster(host:port,...)` from a Cluster's startup nodes; or, for a client
 * configured by Sentinel (whose host and port options are ioredis' defaults, not the master), `sentinel(name @
 * host:port,...)` from its master name and sentinels.
 */
export function describeClient(client: IoRedisLockClient): string {
  if (!client.isCluster) {
    const { sentinels, name } = client.options as { sentinels?: unknown; name?: unknown };
    if (!Array.isArray(sentinels) || sentinels.length === 0) return describeAddress(client.options);
    const shown = (sentinels as unknown[]).map((sentinel) =>
      typeof sentinel === 'object' && sentinel ? describeAddress(sentinel) : '?',
    );
    return `sentinel(${typeof name === 'string' ? name : 'mymaster'} @ ${shown.join(',')})`;
  }
  const nodes = (client as unknown as { startupNodes?: unknown }).startupNodes;
  const shown = Array.isArray(nodes) ? nodes.map(describeStartupNode) : [];
  return `cluster(${shown.join(',') || 'unknown nodes'})`;
}

/** A Cluster startup node: a port, 'host:port', a redis:// URL (its credentials dropped) or { host, port }. */
export function describeStartupNode(node: unknown): string {
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
