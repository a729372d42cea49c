/** Metadata set by `@WithLock()` on a handler, a controller class or a provider method. */
export const WITH_LOCK_METADATA = 'DISTRIBUTED_LOCK:WITH_LOCK';

/** Nest Logger context for everything this module logs. */
export const LOGGER_CONTEXT = 'DistributedLock';

/** Metadata set by `@OnLeader()` on a provider method. */
export const ON_LEADER_METADATA = 'DISTRIBUTED_LOCK:ON_LEADER';
/** Metadata set by `@ScheduledLock()` on a provider method (on the wrapper it puts in the method's place). */
export const SCHEDULED_LOCK_METADATA = 'DISTRIBUTED_LOCK:SCHEDULED_LOCK';
