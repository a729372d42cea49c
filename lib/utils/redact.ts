/** `scheme://user:password@host` -> `scheme://***@host`. */
const URL_CREDENTIALS = /([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]*(?::[^\s/@]*)?@/gi;
/**
 * gRPC's form of the same (etcd3 hands `http://user:password@host` to gRPC, whose errors then name the target
 * `dns:user:password@host`): userinfo after a gRPC resolver scheme without `//`.
 */
const GRPC_TARGET_CREDENTIALS = /\b((?:dns|ipv4|ipv6|unix|unix-abstract|xds):)[^\s/@:]*(?::[^\s/@]*)?@/gi;

/**
 * Removes credentials that a driver may have put into an error message (connection URLs with a password),
 * before the message goes to a log line, a health body or the CLI. Owner tokens never reach these messages:
 * lock events do not carry them.
 */
export function redactCredentials(text: string): string {
  return text.replace(URL_CREDENTIALS, '$1***@').replace(GRPC_TARGET_CREDENTIALS, '$1***@');
}

/** `Name: message` of an error, credentials removed. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return redactCredentials(`${error.name}: ${error.message}`);
  return redactCredentials(String(error));
}
