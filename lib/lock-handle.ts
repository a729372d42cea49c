import type { Observable } from 'rxjs';
import { HOLDING_SCOPE, type LockScope } from './context/lock-context';
import type { LockLostError } from './errors';
import type { LockMode } from './lock-options';
import type { LockRenewal } from './lock-renewal';
import { LockHandleInit, LockKeeper, LockState } from './lock-keeper';
import { FOLLOW_LIFECYCLE, type LockLifecycleListener as LifecycleListener } from './lock-notices';
import { monotonicNow, toEpochMs } from './utils/clock';
import { LIST_SLOT } from './utils/slot-list';

export type { LockState } from './lock-keeper';

/** @internal See LockHandle[LEAVE_TO_EXPIRE]. */
export const LEAVE_TO_EXPIRE = Symbol('LockHandle.leaveToExpire');

/** @internal Direct callbacks for a handle's life: cheaper than subscribing to renewals$ on every grant. */
export type LockLifecycleListener = LifecycleListener<LockHandle>;

/**
 * One held lock. Its watchdog renews it every `renewInterval` until `release()`; the renewals are the
 * `renewals$` stream. Losing the lock is never silent: the stream errors with LockLostError and `signal` aborts.
 * The renewals, loss detection and the server calls that end the lock live in its LockKeeper.
 */
export class LockHandle implements AsyncDisposable {
  /** The key as locked (NFC-normalised), without the service's keyPrefix. */
  readonly key: string;
  /** Random owner token. The server checks it on every extend and release. */
  readonly token: string;
  /**
   * Strictly increasing per key across all holders. Pass it to the resource you protect and have it reject
   * writes carrying a lower token than one it has seen: that closes the gap a paused holder leaves.
   */
  readonly fencingToken: bigint;
  /** Epoch ms when the lock was granted. */
  readonly acquiredAt: number;
  /** 'exclusive', 'read' or 'write'. */
  readonly mode: LockMode;
  /** The semaphore's size when this handle holds a permit; undefined for locks. */
  readonly permits: number | undefined;
  /** @internal Its place in the LockService's list of held handles. */
  [LIST_SLOT] = -1;

  private readonly keeper: LockKeeper<LockHandle>;
  private releasing: Promise<void> | undefined;

  /** @internal Created by LockService. */
  constructor(init: LockHandleInit<LockHandle>) {
    this.key = init.lock.key;
    this.token = init.lock.token;
    this.fencingToken = init.lock.fencingToken;
    this.mode = init.lock.mode ?? 'exclusive';
    this.permits = init.lock.permits;
    this.acquiredAt = Date.now();
    this.keeper = new LockKeeper<LockHandle>(this, init);
  }

  /** Emits after each renewal (and `at-risk` warnings); errors with LockLostError; completes on release. */
  get renewals$(): Observable<LockRenewal> {
    return this.keeper.notices.renewals$;
  }

  /** Aborted, with the LockLostError as reason, when the lock is lost. Never aborted by a normal release. */
  get signal(): AbortSignal {
    // Read after a pause (a frozen process, a blocked loop), the signal is aborted already, not once the
    // watchdog's timer gets its turn: a handler's own timer may run first.
    this.keeper.noticeExpiry();
    return this.keeper.notices.signal;
  }

  /**
   * @internal Calls `listener` once if the lock is lost (at once if it already was); returns a remover.
   * The interceptor uses this instead of `signal`: an AbortController per request is costly on Node 20.
   */
  onLost(listener: (error: LockLostError) => void): () => void {
    return this.keeper.notices.onLost(listener);
  }

  /** @internal LockService's first event listener arrived while this lock was held: report its life from now on. */
  [FOLLOW_LIFECYCLE](lifecycle: LifecycleListener<LockHandle>): void {
    this.keeper.notices.follow(lifecycle);
  }

  /** @internal Called by the first LockScope that holds this handle: its renewals and loss are delivered there. */
  [HOLDING_SCOPE](scope: LockScope): void {
    this.keeper.notices.deliverIn(scope);
  }

  /** Epoch ms until which the lock is certainly held, measured from just before the last successful request. */
  get expiresAt(): number {
    return toEpochMs(this.keeper.validUntil);
  }

  /**
   * What `JSON.stringify(handle)` (and so a Nest route returning the handle) sends: the key, the fencing token
   * as a decimal string (JSON has no bigint, and the token may pass 2^53) and the expiry. Never the owner
   * token: whoever has it can release or extend the lock.
   */
  toJSON(): { key: string; fencingToken: string; expiresAt: number } {
    return { key: this.key, fencingToken: this.fencingToken.toString(), expiresAt: this.expiresAt };
  }

  get state(): LockState {
    return this.keeper.state;
  }

  /** True until the lock is released or lost. */
  get isHeld(): boolean {
    return this.keeper.state === 'held' && monotonicNow() < this.keeper.validUntil;
  }

  /** The namespace (LockService keyPrefix) the key lives in. */
  get namespace(): string {
    return this.keeper.lock.namespace;
  }

  /**
   * Extends the lock now to `ttl` ms (default: the current ttl); later watchdog renewals use the new ttl.
   * Rejects with LockLostError if the lock is gone, or LockBackendError if the server could not be reached
   * (the watchdog keeps retrying while validity remains).
   */
  extend(ttl: number = this.keeper.ttl): Promise<void> {
    return this.keeper.extend(ttl);
  }

  /**
   * Stops the watchdog, waits for a renewal in flight, then deletes the lock if it is still ours.
   * Idempotent. Never touches a lock someone else holds now (the server checks the token).
   * Rejects with LockBackendError only if the server could not be reached; the lock then expires after its ttl.
   */
  release(): Promise<void> {
    this.releasing ??= this.keeper.release();
    return this.releasing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /**
   * @internal Ends the handle without deleting the lock: stops renewing, sets the lock on the server to expire
   * `ms` from now, and forgets it, so that LockService.close() cannot delete it early. Only for backends with
   * `supports.expiry`. Resolves whether the lock was still ours; rejects like release() when the server cannot
   * be reached (the lock then expires after its previous ttl).
   */
  [LEAVE_TO_EXPIRE](ms: number): Promise<boolean> {
    let kept = false;
    this.releasing ??= this.keeper.leave(ms).then((ours) => void (kept = ours));
    return this.releasing.then(() => kept);
  }
}

/**
 * @internal What a nested acquire() or tryAcquire() returns in a call chain that already holds the lock: the same
 * lock (key, tokens, renewals$, signal, extend()), whose release() does not free it. The outermost holder (the
 * `run`, `@WithLock` or locked method that took it) releases it when it ends, as with Redisson's hold count.
 * A view rather than a second LockHandle: one watchdog, one server lock.
 */
export function reentrantHandle(held: LockHandle): LockHandle {
  const view = Object.create(held) as LockHandle;
  Object.defineProperty(view, 'release', { value: releasedAlready });
  return view;
}

function releasedAlready(): Promise<void> {
  return Promise.resolve();
}
