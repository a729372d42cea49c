import { driftAllowance } from '../../utils/drift-allowance';

/**
 * What an etcd grant carries in `LockGrant.state`. The core hands the same object back to extend/release;
 * extend() moves the key to a session lease of another ttl when the ttl changes, so the lease fields are mutable.
 */
export interface EtcdLockState {
  /** The contender key: `<namespace>/<enc(key)>/<lease id hex>`. */
  readonly keyPath: string;
  /** The key's create revision (decimal). It is the fencing token and identifies our key across rebinds. */
  readonly createRevision: string;
  /** The lease the key lives on (decimal int64). */
  leaseId: string;
  /** TTL in seconds the server granted (it may round a small request up to its minimum). */
  leaseTtlSeconds: number;
  /** TTL in seconds we asked for: ceil((ttl + lockDelay) / 1000). */
  requestedTtlSeconds: number;
  /** The request's lock-delay in ms (0 or absent: none): the lease outlives the lock's validity by that much. */
  readonly lockDelay?: number;
  /** Monotonic ms of the grant or last renewal that succeeded, and the ttl it was for (see EtcdSession). */
  renewedAt?: number;
  renewedFor?: number;
}

/**
 * etcd leases work in whole seconds. With a lock-delay the lease lasts ttl + lockDelay while the lock's validity
 * stays ttl (validUntil takes the shorter): after a crash the key, and so the lock, stays that much longer.
 */
export function leaseSecondsFor(ttlMs: number, lockDelay = 0): number {
  return Math.max(1, Math.ceil((ttlMs + lockDelay) / 1000));
}

/**
 * Validity from `startedAt` (taken just before the grant/keepalive that succeeded): the shorter of the
 * requested ttl and the lease's TTL, minus an allowance for clock-rate drift between us and the server.
 */
export function validUntil(startedAt: number, ttlMs: number, leaseTtlSeconds: number): number {
  return startedAt + Math.min(ttlMs, leaseTtlSeconds * 1000) - driftAllowance(ttlMs);
}

export function asEtcdLockState(state: unknown): EtcdLockState {
  const candidate = state as Partial<EtcdLockState> | undefined;
  if (
    typeof candidate?.keyPath !== 'string' ||
    typeof candidate.createRevision !== 'string' ||
    typeof candidate.leaseId !== 'string'
  ) {
    throw new TypeError(
      'This lock was not granted by an EtcdLockBackend (its state has no etcd key, revision and lease).',
    );
  }
  return candidate as EtcdLockState;
}
