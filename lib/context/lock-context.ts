import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockHandle } from '../lock-handle';

/**
 * Locks held by the current request or call chain, so that nested code can find them
 * (`LockService.current()`, `@CurrentLock()`) and a nested acquisition of the same key reuses the held lock
 * instead of deadlocking against itself (reentrancy).
 */
export class LockScope {
  /** The locks of the innermost `@WithLock` handler or method of this scope, for `@CurrentLock()`. */
  handlerLockSet?: { readonly handles: ReadonlyMap<string, LockHandle> } = undefined;

  constructor(
    /** Held handles of this call chain, keyed by scopeKey(). */
    readonly held: Map<string, LockHandle>,
    private requestIdSource: RequestIdSource,
    private readonly parent: LockScope | undefined,
  ) {}

  /** Those locks by key; built only when read. */
  get handlerLocks(): ReadonlyMap<string, LockHandle> | undefined {
    return this.handlerLockSet?.handles;
  }

  /**
   * Carried into lock events and logs; the enclosing scope's when this one has none. Read from the request
   * only when an event needs it: most calls emit none that anyone listens to, and reading headers is a
   * measurable part of a fast lock.
   */
  get requestId(): string | undefined {
    let source = this.requestIdSource;
    if (typeof source === 'function') this.requestIdSource = source = source();
    return source ?? this.parent?.requestId;
  }
}

/** A request id, or how to read it when first needed. */
export type RequestIdSource = string | undefined | (() => string | undefined);

export const lockScopeStorage = new AsyncLocalStorage<LockScope>();

export function currentLockScope(): LockScope | undefined {
  return lockScopeStorage.getStore();
}

/** Runs `fn` in a scope that inherits the locks (and request id) of the enclosing scope and can add its own. */
export function runInLockScope<T>(fn: () => T, requestId?: RequestIdSource): T {
  const parent = lockScopeStorage.getStore();
  return lockScopeStorage.run(new LockScope(new Map(parent?.held), requestId, parent), fn);
}

/** Semaphores live apart from locks of the same name, so they get their own scope entries. */
export function scopeKey(namespace: string, key: string, semaphore = false): string {
  return `${namespace}\u0000${semaphore ? 'semaphore' : 'lock'}\u0000${key}`;
}

export function lockScopeKey(handle: LockHandle): string {
  return scopeKey(handle.namespace, handle.key, handle.permits !== undefined);
}
