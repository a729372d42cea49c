import { MAX_TIMER_DELAY } from '../../utils/clock';
import { MIN_WAITER_TTL } from '../redis/redis-options';
import { fenceRetentionOf } from '../redis/fence-retention';
import type { RedisLockClient } from '../redis/redis-client';
import { DEFAULT_DRIFT_FACTOR } from '../../utils/drift-allowance';

export interface RedlockBackendOptions {
  /**
   * Independent Redis masters (not replicas of one another): an odd number, 3 or 5 usually. The app owns and
   * closes them; the backend only duplicates each once for pub/sub.
   */
  clients: readonly RedisLockClient[];
  /** Share of the ttl taken off every validity for clock drift between us and the servers. Default 0.01. */
  driftFactor?: number;
  /**
   * How long in ms one instance may take to answer one request before it counts as failed. Keep it far below
   * the ttl: validity is what is left of the ttl after the round. Default 1 000 (at most half the ttl).
   */
  requestTimeout?: number;
  /**
   * Longest sleep in ms before a waiter retries on its own when no wake message arrives (a release wakes only
   * the waiter at the head of the line; messages can be lost). Default 1 000.
   */
  recheckInterval?: number;
  /**
   * After a split vote (contenders each got a minority, so all gave their share back), each retries within this
   * many ms, at random, so they do not collide again. Default 50.
   */
  retryJitter?: number;
  /**
   * How long in ms a waiter's place in line (which also holds later readers back behind a writer) outlives its
   * last refresh; a waiter refreshes it at least every third of this. Default 5 000.
   */
  waiterTtl?: number;
  /** How long in ms each instance keeps a key's fencing counter after the lock's ttl. Default 60 000 (see RedisLockBackend). */
  fenceRetention?: number;
}

/** The options, checked, with defaults filled in. */
export interface RedlockSettings {
  readonly driftFactor: number;
  readonly requestTimeout: number;
  readonly recheckInterval: number;
  readonly retryJitter: number;
  readonly waiterTtl: number;
  readonly fenceRetention: number;
}

const DEFAULTS = {
  driftFactor: DEFAULT_DRIFT_FACTOR,
  requestTimeout: 1_000,
  recheckInterval: 1_000,
  retryJitter: 50,
  waiterTtl: 5_000,
};

export function redlockSettings(options: RedlockBackendOptions): RedlockSettings {
  const driftFactor = positive('driftFactor', options.driftFactor ?? DEFAULTS.driftFactor, true);
  if (driftFactor >= 0.5) throw new TypeError(`RedlockBackend: driftFactor must be below 0.5, got ${driftFactor}.`);
  return {
    driftFactor,
    requestTimeout: atMostATimer(
      'requestTimeout',
      positive('requestTimeout', options.requestTimeout ?? DEFAULTS.requestTimeout),
    ),
    recheckInterval: atMostATimer(
      'recheckInterval',
      positive('recheckInterval', options.recheckInterval ?? DEFAULTS.recheckInterval),
    ),
    retryJitter: positive('retryJitter', options.retryJitter ?? DEFAULTS.retryJitter, true),
    waiterTtl: waiterTtlOf(options.waiterTtl ?? DEFAULTS.waiterTtl),
    fenceRetention: fenceRetentionOf('RedlockBackend', options.fenceRetention),
  };
}

/** As RedisLockBackend's: a waiter refreshes its entry every waiterTtl / 3, which needs room for a round trip. */
function waiterTtlOf(value: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < MIN_WAITER_TTL) {
    throw new TypeError(
      `RedlockBackend: waiterTtl must be a whole number of ms >= ${MIN_WAITER_TTL}, got ${String(value)}.`,
    );
  }
  return value;
}

function atMostATimer(name: string, value: number): number {
  if (value > MAX_TIMER_DELAY) {
    throw new TypeError(`RedlockBackend: ${name} must be at most ${MAX_TIMER_DELAY} ms, got ${value}.`);
  }
  return value;
}

function positive(name: string, value: number, zeroAllowed = false): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (!zeroAllowed && value === 0)) {
    throw new TypeError(
      `RedlockBackend: ${name} must be a ${zeroAllowed ? 'non-negative' : 'positive'} finite number, got ${String(value)}.`,
    );
  }
  return value;
}
