import { LockError } from './lock-error';

/** The command line of the `nest-distributed-lock` CLI is wrong; the message says what to change. Exit code 2. */
export class CliUsageError extends LockError {
  override readonly name = 'CliUsageError';
}
