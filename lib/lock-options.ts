/** Per-call options. Each one falls back to `LockServiceOptions.defaults`, then to the library default. */
export interface LockOptions {
  /** Validity of the lock in ms. The watchdog renews it while the handle is held. Default 30 000. */
  ttl?: number;
  /** How long `acquire` waits for a busy key, in ms. 0 = fail at once. `Infinity` = wait forever. Default 10 000. */
  waitTimeout?: number;
  /** Watchdog period in ms. Default ttl / 3, so one missed renewal still leaves a third of the validity. */
  renewInterval?: number;
}

export interface LockServiceOptions {
  /** Namespace for every key this service locks. `[A-Za-z0-9_.:-]`, at most 128 characters. Default 'locks'. */
  keyPrefix?: string;
  defaults?: LockOptions;
  /** Deadline in ms for a single release/isLocked call to the server. Default 5 000. */
  operationTimeout?: number;
}

/** Options after defaults were applied and validated. */
export interface ResolvedLockOptions {
  ttl: number;
  waitTimeout: number;
  renewInterval: number;
}

export const DEFAULT_TTL = 30_000;
export const DEFAULT_WAIT_TIMEOUT = 10_000;
export const DEFAULT_OPERATION_TIMEOUT = 5_000;
export const DEFAULT_KEY_PREFIX = 'locks';
/** Node's setTimeout cannot wait longer than this. */
export const MAX_TTL = 2_147_483_647;
