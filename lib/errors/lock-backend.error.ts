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
    super(
      `${backend} backend at ${address} failed during ${operation}: ${detail}. ` +
        `Check that the server is running and reachable from this process.`,
      options && 'cause' in options ? { cause: withoutCommandArguments(options.cause) } : options,
    );
  }
}

/** A LockBackendError naming `backend`'s kind and address; `cause` only when there is one. */
export function backendErrorOf(
  backend: { readonly kind: string; readonly address: string },
  operation: string,
  detail: string,
  cause?: unknown,
): LockBackendError {
  return new LockBackendError(
    backend.kind,
    backend.address,
    operation,
    detail,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * Driver errors can carry the command that failed, arguments included: ioredis' ReplyError for a failed AUTH
 * holds the password in `command.args`, and util.inspect (console.error, most loggers) prints causes in full.
 * Keep the message, name and stack; drop the arguments.
 */
function withoutCommandArguments(cause: unknown): unknown {
  if (!(cause instanceof Error) || !('command' in cause)) return cause;
  const copy = new Error(cause.message);
  copy.name = cause.name;
  if (cause.stack) copy.stack = cause.stack;
  return copy;
}
