import { dirname } from 'node:path';
import type { EtcdConnectionOptions } from './etcd-client';

/**
 * How soon a client the backend creates tries an etcd host again after its circuit breaker opened. etcd3's own
 * breaker waits 5 s after three calls in a row failed to reach a host (a restart, a refused connection). With a
 * single etcd that means every acquire and renewal is refused for up to 5 s after etcd is back, and a lock whose
 * validity ends meanwhile is lost although the server would have renewed it. Half a second still spares a dead
 * member of a cluster most calls (they go to the others), and costs one fast failed call per half second.
 */
export const HOST_RETRY_AFTER_MS = 500;
/** etcd3's default: the breaker opens after this many failed calls in a row. */
const FAILURES_TO_OPEN = 3;

type Cockatiel = typeof import('cockatiel');

/**
 * `options` for `new Etcd3(...)` with etcd3's own breaker, opened after the same failures, retried after
 * HOST_RETRY_AFTER_MS instead of 5 s. A `faultHandling.host` the app set is kept as it is. The breaker comes from
 * cockatiel, etcd3's own dependency, resolved from etcd3's folder (so it is the copy etcd3 uses, under any
 * package manager's layout).
 */
export function withQuickHostRetry(
  options: EtcdConnectionOptions,
  etcd3: { readonly isRecoverableError: (error: Error) => boolean },
): EtcdConnectionOptions {
  const given = options.faultHandling as { readonly host?: unknown } | undefined;
  if (given?.host) return options;
  const fromEtcd3 = require.resolve('cockatiel', { paths: [dirname(require.resolve('etcd3'))] });
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { circuitBreaker, ConsecutiveBreaker, handleWhen } = require(fromEtcd3) as Cockatiel;
  const host = () =>
    circuitBreaker(handleWhen(etcd3.isRecoverableError), {
      halfOpenAfter: HOST_RETRY_AFTER_MS,
      breaker: new ConsecutiveBreaker(FAILURES_TO_OPEN),
    });
  return { ...options, faultHandling: { ...given, host } };
}

/**
 * etcd3's ClientClosedError ("Tried to call a KV method on etcd3, but the client was already closed"): every later
 * call of that client fails the same way. Read by its message, since etcd3 may be absent (an optional package).
 */
export function isClientClosedError(error: unknown): boolean {
  return error instanceof Error && /client was already closed/.test(error.message);
}
