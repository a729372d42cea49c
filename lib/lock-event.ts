import type { LockMode } from './lock-options';

/** Fields every lock event carries. */
export interface LockEventBase {
  /** The key, without the keyPrefix. */
  readonly key: string;
  /** The LockService keyPrefix. */
  readonly namespace: string;
  /** The bounded key family (a template such as 'file:<<id>>', or the key's prefix before ':'), for metric labels. */
  readonly family: string;
  /** Backend kind: 'memory', 'redis', 'etcd', ... */
  readonly backend: string;
  /** Who holds or waits: `<hostname>/<pid>/<LockService instance id>`. */
  readonly holder: string;
  /** The request id of the call chain, where there is one (set by the Nest integration). */
  readonly requestId?: string;
  readonly mode: LockMode;
  /** Epoch ms when the event happened. */
  readonly at: number;
}

/** A wait ended with the lock. */
export interface LockAcquiredEvent extends LockEventBase {
  readonly type: 'acquired';
  /** ms spent waiting, 0 when the key was free. */
  readonly waitTime: number;
  readonly fencingToken: bigint;
  readonly expiresAt: number;
}

export interface LockRenewedLifecycleEvent extends LockEventBase {
  readonly type: 'renewed';
  readonly fencingToken: bigint;
  readonly expiresAt: number;
  readonly renewalCount: number;
}

/** A renewal failed or went a whole period unanswered, but validity remains; the watchdog retries. */
export interface LockAtRiskLifecycleEvent extends LockEventBase {
  readonly type: 'at-risk';
  readonly fencingToken: bigint;
  /** ms of validity left. */
  readonly remaining: number;
  readonly error: Error;
}

export interface LockLostEvent extends LockEventBase {
  readonly type: 'lost';
  readonly fencingToken: bigint;
  readonly reason: string;
  /** ms from acquisition to loss. */
  readonly holdTime: number;
}

export interface LockReleasedEvent extends LockEventBase {
  readonly type: 'released';
  readonly fencingToken: bigint;
  /** ms from acquisition to release. */
  readonly holdTime: number;
}

/** A wait gave up: the key stayed busy for the whole waitTimeout. */
export interface LockWaitTimeoutEvent extends LockEventBase {
  readonly type: 'timeout';
  readonly waitTime: number;
}

/** What `LockService.events$` emits over a lock's life. */
export type LockEvent =
  | LockAcquiredEvent
  | LockRenewedLifecycleEvent
  | LockAtRiskLifecycleEvent
  | LockLostEvent
  | LockReleasedEvent
  | LockWaitTimeoutEvent;
