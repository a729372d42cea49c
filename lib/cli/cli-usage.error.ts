/** The command line is wrong; the message says what to change. Exit code 2. */
export class CliUsageError extends Error {
  override readonly name = 'CliUsageError';
}
