import { driftAllowance } from '../../utils/drift-allowance';

/** What a ZooKeeper grant carries in `LockGrant.state`; the core hands it back to extend/release. */
export interface ZooKeeperLockState {
  /** Our contender node `/<ns>/<key>/_c_<token>-<lock-|__READ__|__WRIT__><sequence>`, or our lease `/<ns>/<key>/leases/_c_<token>-lease-<sequence>`. */
  readonly nodePath: string;
  /** The session that owns the node (16 hex digits): the node lives exactly as long as that session. */
  readonly sessionId: string;
}

export function asZooKeeperLockState(state: unknown): ZooKeeperLockState {
  const candidate = state as Partial<ZooKeeperLockState> | undefined;
  if (typeof candidate?.nodePath !== 'string' || typeof candidate.sessionId !== 'string') {
    throw new TypeError(
      'This lock was not granted by a ZooKeeperLockBackend (its state has no node path and session).',
    );
  }
  return candidate as ZooKeeperLockState;
}

/**
 * Validity from `startedAt` (taken just before a request that found our node alive): the shorter of the
 * requested ttl and the session timeout. While we are connected the session outlives any ttl, but if the
 * connection dropped right after that request, the server could expire the session (and delete the node)
 * one session timeout after it last heard from us, and not earlier. Less an allowance for clock-rate drift.
 */
export function validUntil(startedAt: number, ttlMs: number, sessionTimeoutMs: number): number {
  const span = Math.min(ttlMs, sessionTimeoutMs);
  return startedAt + span - driftAllowance(span);
}

/** A zxid (8 bytes, big-endian) as a bigint. */
export function zxidOf(bytes: Buffer): bigint {
  return Buffer.from(bytes).readBigUInt64BE(0);
}
