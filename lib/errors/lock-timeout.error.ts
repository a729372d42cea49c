import { LockError } from './lock-error';

/** The lock stayed busy for the whole `waitTimeout`. The server answered; someone else holds the key. */
export class LockTimeoutError extends LockError {
  override readonly name = 'LockTimeoutError';

  constructor(
    readonly key: string,
    readonly waitTimeout: number,
  ) {
    super(
      `Lock "${key}" is held by another owner and did not become free within waitTimeout=${waitTimeout} ms. ` +
        `Retry later, raise waitTimeout, or use tryAcquire() to fail fast.`,
    );
  }
}
