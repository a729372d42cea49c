import type { LockOptions } from '../lock-options';

/** What `@ScheduledLock` stores, checked once when the decorator is applied. */
export interface ScheduledLockMetadata {
  /** The job name: the first part of every firing's key. */
  readonly name: string;
  readonly lockAtLeastFor: number;
  /** Frozen, with a family, so LockService resolves them once. */
  readonly lockOptions: LockOptions;
}
