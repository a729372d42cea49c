import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type SampleBackendKind = 'memory' | 'redis' | 'etcd' | 'zookeeper';

/** Everything the sample reads from the environment, read once at startup. */
export interface SampleConfig {
  /** LOCK_BACKEND: memory (default, one process only), redis, etcd or zookeeper. */
  readonly backend: SampleBackendKind;
  /** REDIS_URL, for LOCK_BACKEND=redis. */
  readonly redisUrl: string;
  /** ETCD_HOSTS, comma-separated, for LOCK_BACKEND=etcd. */
  readonly etcdHosts: string[];
  /** ZK_HOSTS, a ZooKeeper connection string (host:port,host:port[/chroot]), for LOCK_BACKEND=zookeeper. */
  readonly zkHosts: string;
  /**
   * FILES_DIR: where documents live. Several processes pointed at one directory share the store.
   * Default: a new temporary directory per process, since the default memory backend's locks (and its
   * fencing tokens, which restart at 1) live in one process only.
   */
  readonly filesDir: string;
  readonly port: number;
  readonly host: string;
  /** EDIT_DELAY_MS: how long a read-modify-write "thinks" between read and write, to make races visible. */
  readonly editDelayMs: number;
  /** LOCK_TTL_MS: lock validity; the watchdog renews every third of it. A crashed holder frees its locks after it. */
  readonly lockTtlMs: number;
  /** SNAPSHOT_INTERVAL_MS: how often the snapshot job runs; 0 turns it off. */
  readonly snapshotIntervalMs: number;
}

export const SAMPLE_CONFIG = Symbol('SAMPLE_CONFIG');

export function readSampleConfig(env: NodeJS.ProcessEnv = process.env): SampleConfig {
  const backend = (env.LOCK_BACKEND ?? 'memory').toLowerCase();
  if (backend !== 'memory' && backend !== 'redis' && backend !== 'etcd' && backend !== 'zookeeper') {
    throw new Error(`LOCK_BACKEND=${backend} is not supported: use memory, redis, etcd or zookeeper.`);
  }
  return {
    backend,
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    zkHosts: env.ZK_HOSTS ?? '127.0.0.1:2181',
    etcdHosts: (env.ETCD_HOSTS ?? 'http://127.0.0.1:2379')
      .split(',')
      .map((host) => host.trim())
      .filter(Boolean),
    filesDir: env.FILES_DIR || mkdtempSync(join(tmpdir(), 'nest-distributed-lock-sample-')),
    port: integer(env, 'PORT', 3000),
    host: env.HOST ?? '127.0.0.1',
    editDelayMs: integer(env, 'EDIT_DELAY_MS', 75),
    lockTtlMs: integer(env, 'LOCK_TTL_MS', 10_000),
    snapshotIntervalMs: integer(env, 'SNAPSHOT_INTERVAL_MS', 30_000),
  };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name}=${raw} must be a whole number >= 0.`);
  return value;
}
