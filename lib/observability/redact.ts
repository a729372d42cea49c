/** `scheme://user:password@host` -> `scheme://***@host`. */
const URL_CREDENTIALS = /([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]*(?::[^\s/@]*)?@/gi;

/**
 * Removes credentials that a driver may have put into an error message (connection URLs with a password),
 * before the message goes to a log line, a health body or the CLI. Owner tokens never reach these messages:
 * lock events do not carry them.
 */
export function redactCredentials(text: string): string {
  return text.replace(URL_CREDENTIALS, '$1***@');
}

/** `Name: message` of an error, credentials removed. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return redactCredentials(`${error.name}: ${error.message}`);
  return redactCredentials(String(error));
}
