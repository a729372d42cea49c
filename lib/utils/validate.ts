import { InvalidLockKeyError } from '../errors';
import {
  DEFAULT_TTL,
  DEFAULT_WAIT_TIMEOUT,
  LockOptions,
  MAX_LOCK_DELAY,
  MAX_TTL,
  ResolvedLockOptions,
} from '../lock-options';

/** Longest key accepted, in bytes of UTF-8. Keeps server keys and log lines bounded. */
export const MAX_KEY_BYTES = 1024;

/**
 * @internal On a lock's options: a `maxHold` shorter than the ttl is also the grant's ttl, so the lock never outlives
 * it. Set by @ScheduledLock for `lockAtMostFor`; plain `maxHold` keeps the grant's ttl and only stops renewals.
 */
export const GRANT_WITHIN_MAX_HOLD = Symbol('grantWithinMaxHold');

/** @internal */
export type BoundedLockOptions = LockOptions & { readonly [GRANT_WITHIN_MAX_HOLD]?: true };

const KEY_PREFIX_PATTERN = /^[A-Za-z0-9_.:-]{1,128}$/;
// eslint-disable-next-line no-control-regex -- the range starts at NUL on purpose: any ASCII character
const ASCII = /^[\x00-\x7f]+$/;
const KNOWN_LOCK_OPTIONS = optionNames<LockOptions>({
  mode: true,
  permits: true,
  ttl: true,
  waitTimeout: true,
  renewInterval: true,
  maxHold: true,
  lockDelay: true,
  family: true,
  signal: true,
});
const LOCK_MODES: ReadonlySet<string> = new Set(['exclusive', 'read', 'write']);
/** Semaphores keep one entry per holder on the server; this bounds what one key can cost. */
export const MAX_PERMITS = 10_000;

/**
 * Checks a user's key and returns it in NFC form, so that the composed and decomposed spellings of the
 * same text ("é" vs "e" + U+0301) name the same lock rather than two that exclude nothing.
 */
export function validateLockKey(key: unknown): string {
  if (typeof key !== 'string') {
    throw new InvalidLockKeyError(key, `a lock key must be a string, got ${key === null ? 'null' : typeof key}.`);
  }
  if (key.length === 0) {
    throw new InvalidLockKeyError(key, 'the key is empty. Pass a non-empty name such as "file:42".');
  }
  // Most keys are ASCII: already NFC, one byte per character.
  if (key.length <= MAX_KEY_BYTES && ASCII.test(key)) return key;
  if (!key.isWellFormed()) {
    throw new InvalidLockKeyError(
      key,
      'the key contains a lone UTF-16 surrogate, which has no UTF-8 form. Pass well-formed Unicode text.',
    );
  }
  const normalized = key.normalize('NFC');
  const bytes = Buffer.byteLength(normalized, 'utf8');
  if (bytes > MAX_KEY_BYTES) {
    throw new InvalidLockKeyError(
      key,
      `the key is ${bytes} bytes of UTF-8; the limit is ${MAX_KEY_BYTES}. Hash long identifiers (e.g. sha256) first.`,
    );
  }
  return normalized;
}

export function validateKeyPrefix(prefix: unknown): string {
  // No "/": on etcd and ZooKeeper a prefix is a path, and "ns" must not contain the range of "ns/a".
  if (typeof prefix !== 'string' || !KEY_PREFIX_PATTERN.test(prefix)) {
    throw new TypeError(
      `Invalid keyPrefix ${JSON.stringify(prefix)}: use 1-128 characters of [A-Za-z0-9_.:-], e.g. "locks" or "billing-locks".`,
    );
  }
  return prefix;
}

/** Merges per-call options over service defaults over library defaults, rejecting anything unknown or out of range. */
export function resolveLockOptions(
  options: LockOptions | undefined,
  defaults: LockOptions | undefined,
  key = '',
): ResolvedLockOptions {
  checkKnownOptions(options, 'lock options');
  checkKnownOptions(defaults, 'LockService defaults');
  const ttl = options?.ttl ?? defaults?.ttl ?? DEFAULT_TTL;
  const waitTimeout = options?.waitTimeout ?? defaults?.waitTimeout ?? DEFAULT_WAIT_TIMEOUT;
  checkTtl(ttl);
  if (typeof waitTimeout !== 'number' || Number.isNaN(waitTimeout) || waitTimeout < 0) {
    throw new TypeError(
      `Invalid waitTimeout ${shown(waitTimeout)}: use a number of milliseconds >= 0 (0 fails at once when the key is busy, Infinity waits forever).`,
    );
  }
  const mode = options?.mode ?? defaults?.mode ?? 'exclusive';
  if (!LOCK_MODES.has(mode)) {
    throw new TypeError(`Invalid mode ${JSON.stringify(mode)}: use 'exclusive' (the default), 'read' or 'write'.`);
  }
  const permits = options?.permits ?? defaults?.permits;
  if (permits !== undefined) {
    if (!Number.isInteger(permits) || permits < 1 || permits > MAX_PERMITS) {
      throw new TypeError(`Invalid permits ${shown(permits)}: use a whole number from 1 to ${MAX_PERMITS}.`);
    }
    if (mode !== 'exclusive') {
      throw new TypeError(
        `Invalid options: permits (a semaphore) cannot be combined with mode '${mode}'. Use one or the other.`,
      );
    }
  }
  const maxHold = options?.maxHold ?? defaults?.maxHold ?? Infinity;
  if (typeof maxHold !== 'number' || Number.isNaN(maxHold) || maxHold <= 0) {
    throw new TypeError(
      `Invalid maxHold ${shown(maxHold)}: use a number of milliseconds > 0 (Infinity, the default, means no limit).`,
    );
  }
  // The default renew interval follows the ttl actually used, not the ttl the default interval was set for.
  const renewInterval =
    options?.renewInterval ?? (options?.ttl === undefined ? defaults?.renewInterval : undefined) ?? ttl / 3;
  checkRenewInterval(renewInterval, ttl);
  // @ScheduledLock's lockAtMostFor: the grant itself never outlives it (renewals never do, see LockKeeper).
  const bounded: BoundedLockOptions | undefined = options;
  const heldTtl = bounded?.[GRANT_WITHIN_MAX_HOLD] === true ? Math.min(ttl, maxHold) : ttl;
  const lockDelay = options?.lockDelay ?? defaults?.lockDelay ?? 0;
  if (!Number.isSafeInteger(lockDelay) || lockDelay < 0 || lockDelay > MAX_LOCK_DELAY) {
    throw new TypeError(
      `Invalid lockDelay ${shown(lockDelay)}: use a whole number of milliseconds from 0 (off, the default) to ${MAX_LOCK_DELAY}, e.g. 15000.`,
    );
  }
  const family = options?.family ?? defaultFamily(key);
  if (typeof family !== 'string' || family.length === 0 || family.length > 200) {
    throw new TypeError(
      `Invalid family ${JSON.stringify(family)}: use a short, bounded name such as "file" or the key template.`,
    );
  }
  const signal = options?.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError('Invalid signal: pass an AbortSignal (e.g. from an AbortController) or leave it out.');
  }
  return {
    mode,
    permits,
    ttl: Math.ceil(heldTtl),
    waitTimeout,
    renewInterval: heldTtl < ttl ? Math.min(renewInterval, heldTtl / 3) : renewInterval,
    maxHold,
    lockDelay,
    family,
    signal,
  };
}

function defaultFamily(key: string): string {
  const colon = key.indexOf(':');
  return colon > 0 && colon <= 64 ? key.slice(0, colon) : 'default';
}

export function checkTtl(ttl: unknown): asserts ttl is number {
  if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl <= 0 || ttl > MAX_TTL) {
    throw new TypeError(
      `Invalid ttl ${shown(ttl)}: use a finite number of milliseconds > 0 and <= ${MAX_TTL}, e.g. 30000. ` +
        `Every lock needs an expiry so that a crashed holder frees it.`,
    );
  }
}

function checkRenewInterval(renewInterval: unknown, ttl: number): asserts renewInterval is number {
  if (
    typeof renewInterval !== 'number' ||
    !Number.isFinite(renewInterval) ||
    renewInterval <= 0 ||
    renewInterval >= ttl
  ) {
    throw new TypeError(
      `Invalid renewInterval ${shown(renewInterval)}: use a number of milliseconds > 0 and below ttl (${ttl}); ttl/3 is the default.`,
    );
  }
}

function checkKnownOptions(options: object | undefined, what: string): void {
  checkOptionNames(options, KNOWN_LOCK_OPTIONS, what, '{ ttl: 30000 }');
  if (options === undefined) return;
  // `?? default` would read null as "unset": a `ttl: null` from a config file must not become 30 s unnoticed.
  for (const [name, value] of Object.entries(options)) {
    if (value === null) {
      throw new TypeError(`Invalid ${name} null in ${what}: leave it out (or undefined) for the default.`);
    }
  }
}

/** Every key of every member of a union: the names one constructor takes in any of its forms. */
type OptionName<T> = T extends unknown ? keyof T & string : never;

/**
 * The names an options type declares, as a set to check input against (checkOptionNames). Given as a record with
 * one entry per name, so that the compiler refuses a list that misses one or adds one: it cannot drift from the type.
 */
export function optionNames<T>(names: Record<OptionName<T>, true>): ReadonlySet<string> {
  return new Set(Object.keys(names));
}

/**
 * Refuses an options object with a name it does not know (a typo such as `keyprefix` would otherwise be ignored,
 * silently); undefined is no options at all.
 */
export function checkOptionNames(
  options: object | undefined,
  known: ReadonlySet<string>,
  what: string,
  example: string,
): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`Invalid ${what}: expected an object such as ${example}, got ${String(options)}.`);
  }
  for (const name of Object.keys(options)) {
    if (!known.has(name)) {
      throw new TypeError(`Unknown option "${name}" in ${what}. Known options: ${[...known].join(', ')}.`);
    }
  }
}

/** A number as it is; anything else typed, and a string quoted: "100" from a config file is not read as 100. */
function shown(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return `${JSON.stringify(value)} (string)`;
  if (typeof value === 'bigint' || typeof value === 'boolean') return `${String(value)} (${typeof value})`;
  return value === null ? 'null' : `(${typeof value})`;
}
