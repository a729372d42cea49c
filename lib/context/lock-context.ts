import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockHandle } from '../lock-handle';

/**
 * Locks held by the current request or call chain, so that nested code can find them
 * (`LockService.current()`, `@CurrentLock()`) and a nested acquisition of the same key reuses the held lock
 * instead of deadlocking against itself (reentrancy).
 */
export interface LockScope {
  /** Held handles of this call chain, keyed by scopeKey(). */
  readonly held: Map<string, LockHandle>;
  /** Carried into lock events and logs. */
  readonly requestId?: string;
  /** The locks of the innermost `@WithLock` handler or method of this scope, by key, for `@CurrentLock()`. */
  handlerLocks?: ReadonlyMap<string, LockHandle>;
}

export const lockScopeStorage = new AsyncLocalStorage<LockScope>();

export function currentLockScope(): LockScope | undefined {
  return lockScopeStorage.getStore();
}

/** Runs `fn` in a scope that inherits the locks (and request id) of the enclosing scope and can add its own. */
export function runInLockScope<T>(fn: () => T, options: { requestId?: string } = {}): T {
  const parent = lockScopeStorage.getStore();
  const requestId = options.requestId ?? parent?.requestId;
  // A fixed shape, no spread: this runs for every @WithLock call.
  return lockScopeStorage.run({ held: new Map(parent?.held), requestId }, fn);
}

/** Semaphores live apart from locks of the same name, so they get their own scope entries. */
export function scopeKey(namespace: string, key: string, semaphore = false): string {
  return `${namespace}\u0000${semaphore ? 'semaphore' : 'lock'}\u0000${key}`;
}

export function lockScopeKey(handle: LockHandle): string {
  return scopeKey(handle.namespace, handle.key, handle.permits !== undefined);
}
