import { LockError } from './lock-error';

/** The LockService was closed (usually: the application is shutting down), so it grants no new locks. */
export class LockServiceClosedError extends LockError {
  override readonly name = 'LockServiceClosedError';

  constructor(readonly key: string) {
    super(
      `Cannot lock "${key}": the LockService is closed because the application is shutting down. Locks are only granted while it runs.`,
    );
  }
}
