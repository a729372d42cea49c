import { LockError } from './lock-error';

/**
 * The lock is no longer ours: it expired, was deleted, or its validity ran out while the
 * server was unreachable or the event loop was blocked. Work done after this ran without mutual exclusion.
 */
export class LockLostError extends LockError {
  override readonly name = 'LockLostError';

  constructor(
    readonly key: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `Lock "${key}" was lost: ${reason}. Stop the work guarded by it (watch lock.signal), ` +
        `and protect the resource with the fencing token so late writes are rejected.`,
      options,
    );
  }
}
