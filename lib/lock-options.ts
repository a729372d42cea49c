/**
 * 'exclusive' (default) and 'write' are the same lock: one holder, excluding readers too.
 * 'read' is shared: many readers hold at once, no writer meanwhile. A reader that arrives after a
 * queued writer waits behind it, so a stream of readers cannot starve writers.
 */
export type LockMode = 'exclusive' | 'read' | 'write';

/** Per-call options. Each one falls back to `LockServiceOptions.defaults`, then to the library default. */
export interface LockOptions {
  /** Exclusive (default), or a read/write lock. 'read' and 'write' are not combinable with `permits`. */
  mode?: LockMode;
  /**
   * Makes the key a counting semaphore: at most `permits` holders at once, each with its own watchdog.
   * Every holder of a key must use the same number. Semaphores live apart from locks of the same name.
   */
  permits?: number;
  /** Validity of the lock in ms. The watchdog renews it while the handle is held. Default 30 000. */
  ttl?: number;
  /** How long `acquire` waits for a busy key, in ms. 0 = fail at once. `Infinity` = wait forever. Default 10 000. */
  waitTimeout?: number;
  /** Watchdog period in ms. Default ttl / 3, so one missed renewal still leaves a third of the validity. */
  renewInterval?: number;
  /**
   * Longest time in ms the watchdog keeps a lock alive. After it, renewals stop and the lock expires at the
   * end of its validity, reported as lost: one stuck request cannot hold a key forever. Default: no limit.
   */
  maxHold?: number;
  /**
   * Lock-delay in ms (Chubby, Consul): when this holder is lost without releasing (it crashed, or stopped
   * renewing), the key stays unavailable to everyone for this long after its validity ended, so that work
   * the lost holder may still be doing ends before anyone else starts. A release clears it at once.
   * It protects resources that do not check fencing tokens, at the price of this much liveness after a crash.
   * Default 0 (off). Memory, Redis, Redlock and etcd; ZooKeeper refuses it with LockNotSupportedError.
   */
  lockDelay?: number;
  /**
   * A bounded name for the kind of key, used to label metrics and events (never the resolved key, whose
   * values are unbounded). Default: the text before the first ':' ('file:42' -> 'file'), else 'default'.
   * `@WithLock` passes its template.
   */
  family?: string;
  /** Cancels a wait: when it aborts, `acquire` stops waiting, leaves the queue and rejects with its reason. */
  signal?: AbortSignal;
}

export interface LockServiceOptions {
  /** Namespace for every key this service locks. `[A-Za-z0-9_.:-]`, at most 128 characters. Default 'locks'. */
  keyPrefix?: string;
  defaults?: LockOptions;
  /** Deadline in ms for a single release/isLocked call to the server. Default 5 000. */
  operationTimeout?: number;
  /** Names this instance in events, logs and the inspector. Default: a random id. Part of `<hostname>/<pid>/<instanceId>`. */
  instanceId?: string;
}

/** Options after defaults were applied and validated. */
export interface ResolvedLockOptions {
  mode: LockMode;
  permits: number | undefined;
  ttl: number;
  waitTimeout: number;
  renewInterval: number;
  maxHold: number;
  lockDelay: number;
  family: string;
  signal: AbortSignal | undefined;
}

export const DEFAULT_TTL = 30_000;
export const DEFAULT_WAIT_TIMEOUT = 10_000;
export const DEFAULT_OPERATION_TIMEOUT = 5_000;
export const DEFAULT_KEY_PREFIX = 'locks';
/** Node's setTimeout cannot wait longer than this. */
export const MAX_TTL = 2_147_483_647;
/** Longest lock-delay accepted: an hour. Chubby's is a minute and Consul's 15 s; longer is almost surely a unit mistake. */
export const MAX_LOCK_DELAY = 3_600_000;
