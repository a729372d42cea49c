import { redactCredentials } from '../utils/redact';
import { LockError } from './lock-error';

/** The coordination server could not be reached or answered with an error. Distinct from "busy" (LockTimeoutError). */
export class LockBackendError extends LockError {
  override readonly name: string = 'LockBackendError';

  constructor(
    /** e.g. 'redis', 'etcd'. */
    readonly backend: string,
    /** Where the backend points, without credentials, e.g. '127.0.0.1:6379'. */
    readonly address: string,
    readonly operation: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    // Drivers may put a connection URL with its password into their messages (gRPC, for etcd): never into ours.
    super(
      redactCredentials(
        `${backend} backend at ${address} failed during ${operation}: ${detail.replace(/\.+$/, '')}. ${whatToCheck(detail)}`,
      ),
      options && 'cause' in options ? { cause: withoutSecrets(options.cause) } : options,
    );
  }
}

/**
 * Refusals of the credentials or of a command: a reachable server, so "is it running?" would mislead. A script
 * whose command the ACL refuses fails with "The user executing the script can't <verb> ..." (Redis 7).
 */
const REFUSED_ACCESS =
  /\b(NOPERM|WRONGPASS|NOAUTH|NO_AUTH|AUTH_FAILED|PERMISSION_DENIED|permission denied|authentication failed|user executing the script can't|user name is empty|invalid auth token|unauthenticated|INVALID_ACL)\b/i;

/** Errors of the client the app passed in, not of the server: what to change in its set-up. */
const CLIENT_SET_UP: ReadonlyArray<readonly [RegExp, string]> = [
  [
    /close\(\) was called|client was already closed|was closed while this call waited/,
    'The backend or its client was closed: use it between its creation and close(), and close a client you ' +
      'passed in only after the LockService.',
  ],
  [
    // ioredis with sentinels, none of which answered (its message also says "Connection is closed").
    /All sentinels are unreachable/,
    'No sentinel answered, or none knows the master name: check the sentinels’ addresses, the `name` option and ' +
      '`sentinelPassword`.',
  ],
  [
    // ioredis, once its connection ended: quit() by the app, or reconnection given up.
    /Connection is closed/,
    'The client’s connection is closed: if the app closed the client, close it only after the LockService; ' +
      'otherwise check that the server is running and reachable from this process.',
  ],
  [
    /with a chroot in the connection string/,
    'Create the missing node, or fix the path after the host list in the connection string.',
  ],
  [
    /The client is closed|not connected \(call connect\(\) before use\)/,
    'The client is not connected, or was closed: call `await client.connect()` before passing it to the backend, ' +
      'and close it only after the LockService.',
  ],
  [
    /enableOfflineQueue/,
    "The client is not connected yet and its offline queue is disabled: pass it once it is 'ready', or leave " +
      'enableOfflineQueue on.',
  ],
  [
    /subscriber mode|are allowed in this context/i,
    'The client is subscribed to channels, so it takes no other commands: pass a client that is not in subscriber ' +
      'mode (the backend opens its own subscriber connection).',
  ],
];

function whatToCheck(detail: string): string {
  if (REFUSED_ACCESS.test(detail))
    return 'The server refused the credentials or the command: check the user, its password and its permissions (ACL).';
  for (const [pattern, advice] of CLIENT_SET_UP) if (pattern.test(detail)) return advice;
  // ioredis and node-redis keep reconnecting after a refused login too, so that state alone proves no outage.
  if (/connection (re)?connecting/.test(detail)) {
    return 'Check that the server is running and reachable from this process, and that the client’s credentials are right.';
  }
  return 'Check that the server is running and reachable from this process.';
}

/**
 * A LockBackendError naming `backend`'s kind and address, and what the backend knows of its connection when it is
 * not up (LockBackend.describeConnection); `cause` only when there is one.
 */
export function backendErrorOf(
  backend: { readonly kind: string; readonly address: string; describeConnection?(): string | undefined },
  operation: string,
  detail: string,
  cause?: unknown,
): LockBackendError {
  const connection = connectionOf(backend);
  return new LockBackendError(
    backend.kind,
    backend.address,
    operation,
    connection ? `${detail} (${connection})` : detail,
    cause === undefined ? undefined : { cause },
  );
}

/** A backend's own words on its connection; a backend that fails to say must not replace the error being built. */
function connectionOf(backend: { describeConnection?(): string | undefined }): string | undefined {
  try {
    return backend.describeConnection?.() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Driver errors can carry the command that failed, arguments included: ioredis' ReplyError for a failed AUTH
 * holds the password in `command.args`, and util.inspect (console.error, most loggers) prints causes in full.
 * Their messages can hold a connection URL with its password. Keep the name, and the message and stack without
 * credentials; drop the arguments.
 */
function withoutSecrets(cause: unknown): unknown {
  if (!(cause instanceof Error)) return cause;
  const message = redactCredentials(cause.message);
  if (!('command' in cause) && message === cause.message) return cause;
  const copy = new Error(message);
  copy.name = cause.name;
  if (cause.stack) copy.stack = redactCredentials(cause.stack);
  return copy;
}
