import type { RedisOptions } from 'ioredis';
import { raceAbort, timeoutSignal } from '../shared/abort';
import type { ScriptRunner } from './redis-script';

/**
 * What the backend needs from the app's client: an ioredis `Redis` fits. Kept narrow so a wrapper, or
 * later a Cluster adapter, can be passed; nothing here is ever closed or modified by the backend.
 */
export interface RedisLockClient extends ScriptRunner {
  /** Read for the address in error messages (host, port or path; never the password). */
  readonly options: object;
  /** ioredis connection status, shown in error messages when the server does not answer. */
  readonly status?: string;
  exists(...keys: string[]): Promise<number>;
  /** Batches many script calls into one round trip (renewals of many held locks). */
  pipeline?(): RedisPipeline;
  /** Used once per backend, lazily, for the shared subscriber connection. */
  duplicate(override?: Partial<RedisOptions>): RedisConnection;
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
