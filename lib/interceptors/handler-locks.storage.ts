import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockHandle } from '../lock-handle';

/**
 * The locks of the innermost `@WithLock` handler or method, by key, for `@CurrentLock()`.
 * Kept apart from the lock scope, which also holds locks of enclosing calls.
 */
export const handlerLocksStorage = new AsyncLocalStorage<ReadonlyMap<string, LockHandle>>();
