/** Metadata set by `@WithLock()` on a handler, a controller class or a provider method. */
export const WITH_LOCK_METADATA = 'DISTRIBUTED_LOCK:WITH_LOCK';

/**
 * The handles a `@WithLock` handler holds, as a `ReadonlyMap<key, LockHandle>`, stored on the HTTP request
 * under this symbol so that code outside the handler's async context (middleware, filters) can find them.
 */
export const REQUEST_LOCKS = Symbol.for('DISTRIBUTED_LOCK:REQUEST_LOCKS');

/** Nest Logger context for everything this module logs. */
export const LOGGER_CONTEXT = 'DistributedLock';
