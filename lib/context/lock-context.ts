import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockHandle } from '../lock-handle';

/**
 * Locks held by the current request or call chain, so that nested code can find them
 * (`LockService.current()`, `@CurrentLock()`) and a nested acquisition of the same key reuses the held lock
 * instead of deadlocking against itself (reentrancy).
 */
export interface LockScope {
  /** Held handles of this call chain, keyed by `<keyPrefix>\u0000<key>`. */
  readonly held: Map<string, LockHandle>;
}

export const lockScopeStorage = new AsyncLocalStorage<LockScope>();

export function currentLockScope(): LockScope | undefined {
  return lockScopeStorage.getStore();
}

/** Runs `fn` in a scope that inherits the locks of the enclosing scope and can add its own. */
export function runInLockScope<T>(fn: () => T): T {
  const parent = lockScopeStorage.getStore();
  return lockScopeStorage.run({ held: new Map(parent?.held) }, fn);
}

export function scopeKey(namespace: string, key: string): string {
  return `${namespace}\u0000${key}`;
}
