import { LockError } from './lock-error';

/**
 * A `@ScheduledLock` job is set up in a way that cannot run on exactly one instance (a request-scoped provider,
 * a key that names request values, lockAtLeastFor above lockAtMostFor, no @Cron/@Interval/@Timeout).
 * Thrown when the decorator is applied or when the app starts, never when a job fires.
 */
export class ScheduledLockConfigError extends LockError {
  override readonly name = 'ScheduledLockConfigError';

  constructor(
    /** `Class.method`, or the job name when the method is not known yet. */
    readonly where: string,
    problem: string,
  ) {
    super(`@ScheduledLock on ${where}: ${problem}`);
  }
}
