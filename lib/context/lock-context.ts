import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockHandle } from '../lock-handle';

/**
 * Locks held by the current request or call chain, so that nested code can find them
 * (`LockService.current()`, `@CurrentLock()`) and a nested acquisition of the same key reuses the held lock
 * instead of deadlocking against itself (reentrancy).
 */
export class LockScope {
  /** The locks of the innermost `@WithLock` handler or method of this scope, for `@CurrentLock()`. */
  handlerLockSet?: { readonly handles: ReadonlyMap<string, LockHandle>; readonly namesSeveralKeys: boolean } =
    undefined;

  constructor(
    /**
     * Held handles of this call chain, at most one per key and kind (lock or semaphore), in the order they were
     * first held. An array rather than a Map keyed by a built string: a call holds one or a few, and a Map and a
     * key string per request are measurable on the path of every @WithLock request.
     */
    private readonly held: LockHandle[],
    private requestIdSource: RequestIdSource,
    private readonly parent: LockScope | undefined,
    /** The call (a Nest ExecutionContext) this scope locks, if any: see `locks()`. */
    private call: object | undefined,
  ) {}

  /**
   * Whether this scope or an enclosing one locks `call` already: a class-level and a method-level @WithLock both
   * bind LockInterceptor, and the second runs inside the first one's scope. Cheaper than a WeakSet of contexts,
   * whose entry per request costs about a microsecond in inserts and GC.
   */
  locks(call: object): boolean {
    return this.call === call || (this.parent?.locks(call) ?? false);
  }

  /** Whether this call chain holds no lock yet (as a request's own scope starts). */
  get isEmpty(): boolean {
    return this.held.length === 0;
  }

  /**
   * Makes `handle` visible to nested code; it replaces one held for the same key and kind, in its place. The
   * first scope to hold a handle is the call chain its renewals and loss are delivered in (see HOLDING_SCOPE).
   */
  hold(handle: LockHandle): void {
    handle[HOLDING_SCOPE](this);
    const index = this.indexOf(handle.namespace, handle.key, handle.permits !== undefined);
    if (index >= 0) this.held[index] = handle;
    else this.held.push(handle);
  }

  /** The handle held for `key` in `namespace`: a semaphore's permit when `semaphore`, else a lock. */
  find(namespace: string, key: string, semaphore: boolean): LockHandle | undefined {
    const index = this.indexOf(namespace, key, semaphore);
    return index >= 0 ? this.held[index] : undefined;
  }

  /** The held handles, in the order they were first held. */
  handles(): readonly LockHandle[] {
    return this.held;
  }

  private indexOf(namespace: string, key: string, semaphore: boolean): number {
    for (let index = 0; index < this.held.length; index++) {
      const handle = this.held[index];
      if (handle.key === key && handle.namespace === namespace && (handle.permits !== undefined) === semaphore) {
        return index;
      }
    }
    return -1;
  }

  /**
   * The call this scope was made for has released its locks: forget them. Every async resource created in the
   * scope (a timer, a socket write) carries it as its store, and some are still reachable at the young-generation
   * collections that follow the call. Without this, every request's handles and lock set survived into the old
   * generation, to be freed only by a full collection: on Redis, about 1.5 KB per request and a few microseconds
   * of CPU in collections. Lookups skip released handles anyway.
   */
  end(): void {
    this.held.length = 0;
    this.handlerLockSet = undefined;
    // Both reach the request (an ExecutionContext holds its request and response).
    this.call = undefined;
    if (typeof this.requestIdSource === 'function') this.requestIdSource = undefined;
  }

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

/**
 * @internal How a scope tells a handle that it holds it (LockHandle implements it). A symbol here, not an import of
 * LockHandle: the handle's modules import this one.
 */
export const HOLDING_SCOPE = Symbol('LockHandle.holdingScope');

/** A request id, or how to read it when first needed. */
export type RequestIdSource = string | undefined | (() => string | undefined);

export const lockScopeStorage = new AsyncLocalStorage<LockScope>();

export function currentLockScope(): LockScope | undefined {
  return lockScopeStorage.getStore();
}

/**
 * Runs `fn` in `scope`, or outside every scope when there is none. For what runs on its own schedule (a renewal
 * timer, a server's message on a shared connection): it would otherwise run in the scope of whichever call
 * happened to start that timer or connection, and code it calls would see that call's locks as its own.
 */
export function runInScopeOf<T>(scope: LockScope | undefined, fn: () => T): T {
  return scope ? lockScopeStorage.run(scope, fn) : lockScopeStorage.exit(fn);
}

/**
 * Runs `fn` in a scope that inherits the locks (and request id) of the enclosing scope and can add its own.
 * `call`: the Nest ExecutionContext whose handler the scope locks (see LockScope.locks()).
 */
export function runInLockScope<T>(fn: (scope: LockScope) => T, requestId?: RequestIdSource, call?: object): T {
  const parent = lockScopeStorage.getStore();
  const scope = new LockScope(parent ? parent.handles().slice() : [], requestId, parent, call);
  return lockScopeStorage.run(scope, fn, scope);
}
