import { HttpStatus } from '@nestjs/common';
import { InvalidLockKeyError, LockBackendError, LockError, LockLostError, LockTimeoutError } from '../errors';
import { UnresolvedPlaceholderError } from '../errors/unresolved-placeholder.error';

/** What a client is told about a lock failure, whatever the transport. */
export interface LockErrorResponse {
  statusCode: number;
  /** The HTTP reason phrase, as Nest's own exceptions put it. */
  error: string;
  message: string;
  /** The library's error class, e.g. 'LockTimeoutError'. */
  code: string;
  /** The lock key involved, when there is one. */
  key?: string;
}

/**
 * The response for a lock failure, or undefined for any other error.
 * Busy -> 409; lost while running, or backend unreachable -> 503; bad key or placeholder -> 400.
 * An exception filter sees what `@WithLock` threw over HTTP: an HttpException whose `cause` is the lock error.
 * That cause is read too, so `describeLockError(exception)` works in a filter as it does on the error itself.
 */
export function describeLockError(error: unknown): LockErrorResponse | undefined {
  if (!(error instanceof LockError) && error instanceof Error && error.cause instanceof LockError) error = error.cause;
  if (error instanceof LockTimeoutError) {
    return response(
      HttpStatus.CONFLICT,
      'Conflict',
      error,
      `The resource is locked by another request: "${error.key}".`,
      error.key,
    );
  }
  if (error instanceof LockLostError) {
    return response(
      HttpStatus.SERVICE_UNAVAILABLE,
      'Service Unavailable',
      error,
      `The lock "${error.key}" was lost while the request ran; its work may be incomplete.`,
      error.key,
    );
  }
  if (error instanceof LockBackendError) {
    // The backend's address stays in the server log (the error is the cause), not in the response.
    return response(
      HttpStatus.SERVICE_UNAVAILABLE,
      'Service Unavailable',
      error,
      'The lock service is unavailable. Try again later.',
    );
  }
  if (error instanceof UnresolvedPlaceholderError || error instanceof InvalidLockKeyError) {
    return response(HttpStatus.BAD_REQUEST, 'Bad Request', error, error.message);
  }
  return undefined;
}

function response(statusCode: number, reason: string, error: Error, message: string, key?: string): LockErrorResponse {
  return { statusCode, error: reason, message, code: error.name, ...(key === undefined ? {} : { key }) };
}
