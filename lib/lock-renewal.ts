/** What a handle's `renewals$` stream emits. It errors with LockLostError and completes on release. */
export type LockRenewal = LockRenewedEvent | LockAtRiskEvent;

/** The watchdog (or a manual `extend`) pushed the lock's validity forward. */
export interface LockRenewedEvent {
  readonly type: 'renewed';
  readonly key: string;
  readonly fencingToken: bigint;
  /** Epoch ms until which the lock is now certainly held. */
  readonly expiresAt: number;
  /** The ttl used for this renewal, ms. */
  readonly ttl: number;
  /** How many renewals this handle has made so far, starting at 1. */
  readonly renewalCount: number;
}

/**
 * A renewal failed for a transient reason (server slow or unreachable), or went a whole period unanswered, but
 * validity remains. The watchdog retries.
 */
export interface LockAtRiskEvent {
  readonly type: 'at-risk';
  readonly key: string;
  readonly fencingToken: bigint;
  readonly expiresAt: number;
  /** ms of validity left when this was emitted. */
  readonly remaining: number;
  readonly error: Error;
}
