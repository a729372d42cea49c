import { randomUUID } from 'node:crypto';
import type { AcquireRequest, HeldLock, LockGrant } from '../../lib/backends/lock-backend.interface';

/**
 * Requests and held locks as a backend sees them, for the specs that drive a LockBackend directly
 * (below LockService). Each backend's spec helpers re-export these, with their own default namespace where
 * they need one.
 */

export const DEFAULT_NAMESPACE = 'locks';

/** A fresh owner's request for `key`. */
export function lockRequest(key: string, ttl = 5_000, namespace = DEFAULT_NAMESPACE): AcquireRequest {
  return { namespace, key, token: randomUUID(), ttl };
}

/** The lock `grant` gave `request`'s owner, as LockService passes it back to extend/release. */
export function held(request: AcquireRequest, grant: LockGrant): HeldLock {
  return { ...request, fencingToken: grant.fencingToken, state: grant.state };
}

/** A signal that never aborts, for a backend's acquire(request, signal). */
export const never = (): AbortSignal => new AbortController().signal;
