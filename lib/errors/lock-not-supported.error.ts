import { LockError } from './lock-error';

/** The chosen backend cannot offer this lock kind or option safely, so it refuses instead of falling back. */
export class LockNotSupportedError extends LockError {
  override readonly name = 'LockNotSupportedError';

  constructor(
    readonly backend: string,
    feature: string,
    why: string,
  ) {
    super(`The ${backend} backend does not support ${feature}: ${why}`);
  }
}
