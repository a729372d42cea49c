import type { Observable } from 'rxjs';
import type { BackendLockEvent, HeldLock, LockBackend } from './backends/lock-backend.interface';
import { LockBackendError, LockError, LockLostError } from './errors';
import type { LockMode } from './lock-options';
import type { LockRenewal } from './lock-renewal';
import { LockLifecycleListener as LifecycleListener, LockNotices } from './lock-notices';
import { monotonicNow, toEpochMs } from './utils/clock';
import { LIST_SLOT } from './utils/slot-list';
import { checkTtl } from './utils/validate';
import { withDeadline, withLazyDeadline } from './utils/deadline';
import { ExtendBatcher } from './watchdog/extend-batcher';
import { RenewalScheduler } from './watchdog/renewal-scheduler';
import { RENEW, VALIDITY_LEFT, Watchdog } from './watchdog/watchdog';

export type LockState = 'held' | 'released' | 'lost';

/** @internal See LockHandle[LEAVE_TO_EXPIRE]. */
export const LEAVE_TO_EXPIRE = Symbol('LockHandle.leaveToExpire');

/** 'expire': maxHold passed, so stop renewing and let the lock run out. */
type RenewOutcome = 'renewed' | 'retry' | 'lost' | 'expire';

/** @internal What LockService hands a new handle. */
export interface LockHandleInit {
  backend: LockBackend;
  lock: HeldLock;
  validUntil: number;
  renewInterval: number;
  operationTimeout: number;
  /** ms after which the watchdog stops renewing (Infinity: never). */
  maxHold: number;
  onEnd: (handle: LockHandle) => void;
  /** Told of renewals and how the lock ended, without an rxjs subscription per handle (LockService's events). */
  lifecycle?: LockLifecycleListener;
  /** Handed back to `lifecycle` with every call: what the listener needs about this handle, without a lookup. */
  lifecycleContext?: unknown;
}

/** @internal Direct callbacks for a handle's life: cheaper than subscribing to renewals$ on every grant. */
export type LockLifecycleListener = LifecycleListener<LockHandle>;

/**
 * One held lock. Its watchdog renews it every `renewInterval` until `release()`; the renewals are the
 * `renewals$` stream. Losing the lock is never silent: the stream errors with LockLostError and `signal` aborts.
 * It is also the watchdog's Renewable, structurally: those members are internal, so its declaration does not name it.
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

  private readonly backend: LockBackend;
  private readonly lock: HeldLock;
  /** renewals$, signal and loss listeners, each made on first use. */
  private readonly notices: LockNotices<LockHandle>;
  private readonly watchdog: Watchdog;
  private readonly extender: ExtendBatcher;
  private readonly operationTimeout: number;
  private readonly onEnd: (handle: LockHandle) => void;
  private readonly acquiredAtMonotonic = monotonicNow();
  private readonly maxHold: number;
  private holdLimitReached = false;
  private currentState: LockState = 'held';
  private validUntil: number;
  private ttl: number;
  private renewalCount = 0;
  /** The last renewal, which the next one (and release) waits for; none before the first. */
  private renewalChain: Promise<RenewOutcome> | undefined;
  /** Renewals queued or running; release waits for them only when there are any. */
  private renewing = 0;
  private releasing: Promise<void> | undefined;
  private stopObserving: (() => void) | undefined;

  /** @internal Created by LockService. */
  constructor(init: LockHandleInit) {
    this.backend = init.backend;
    this.lock = init.lock;
    this.key = init.lock.key;
    this.token = init.lock.token;
    this.fencingToken = init.lock.fencingToken;
    this.mode = init.lock.mode ?? 'exclusive';
    this.permits = init.lock.permits;
    this.ttl = init.lock.ttl;
    this.validUntil = init.validUntil;
    this.operationTimeout = init.operationTimeout;
    this.onEnd = init.onEnd;
    this.maxHold = init.maxHold;
    this.notices = new LockNotices<LockHandle>(this, init.lifecycle, init.lifecycleContext);
    this.acquiredAt = Date.now();
    this.extender = ExtendBatcher.for(init.backend);
    this.watchdog = new Watchdog(this, init.renewInterval, RenewalScheduler.for(init.backend));
    this.watchdog.start();
    this.stopObserving = init.backend.observe?.(init.lock, (event) => this.onBackendEvent(event));
  }

  /** Emits after each renewal (and `at-risk` warnings); errors with LockLostError; completes on release. */
  get renewals$(): Observable<LockRenewal> {
    return this.notices.renewals$;
  }

  /** Aborted, with the LockLostError as reason, when the lock is lost. Never aborted by a normal release. */
  get signal(): AbortSignal {
    return this.notices.signal;
  }

  /**
   * @internal Calls `listener` once if the lock is lost (at once if it already was); returns a remover.
   * The interceptor uses this instead of `signal`: an AbortController per request is costly on Node 20.
   */
  onLost(listener: (error: LockLostError) => void): () => void {
    return this.notices.onLost(listener);
  }

  /** Epoch ms until which the lock is certainly held, measured from just before the last successful request. */
  get expiresAt(): number {
    return toEpochMs(this.validUntil);
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
    return this.currentState;
  }

  /** True until the lock is released or lost. */
  get isHeld(): boolean {
    return this.currentState === 'held' && monotonicNow() < this.validUntil;
  }

  /** The namespace (LockService keyPrefix) the key lives in. */
  get namespace(): string {
    return this.lock.namespace;
  }

  /**
   * Extends the lock now to `ttl` ms (default: the current ttl); later watchdog renewals use the new ttl.
   * Rejects with LockLostError if the lock is gone, or LockBackendError if the server could not be reached
   * (the watchdog keeps retrying while validity remains).
   */
  async extend(ttl: number = this.ttl): Promise<void> {
    checkTtl(ttl);
    const wholeTtl = Math.ceil(ttl);
    let failure: unknown;
    const outcome = await this.renew(wholeTtl, (error) => (failure = error));
    if (outcome === 'lost')
      throw this.notices.lostError ?? new LockLostError(this.key, 'the lock was already released');
    if (outcome === 'retry') throw failure;
    if (outcome === 'expire') {
      throw new LockLostError(
        this.key,
        `it has been held for maxHold=${this.maxHold} ms and may not be extended further`,
      );
    }
    if (wholeTtl !== this.ttl) {
      this.ttl = wholeTtl;
      this.watchdog.setInterval(wholeTtl / 3);
    }
  }

  /**
   * Stops the watchdog, waits for a renewal in flight, then deletes the lock if it is still ours.
   * Idempotent. Never touches a lock someone else holds now (the server checks the token).
   * Rejects with LockBackendError only if the server could not be reached; the lock then expires after its ttl.
   */
  release(): Promise<void> {
    this.releasing ??= this.doRelease();
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
    this.releasing ??= this.leave(ms).then((ours) => void (kept = ours));
    return this.releasing.then(() => kept);
  }

  private async leave(ms: number): Promise<boolean> {
    const wasHeld = this.currentState === 'held';
    if (wasHeld) this.currentState = 'released';
    const stopping = this.watchdog.stop();
    if (stopping) await stopping;
    if (this.renewing > 0) await this.renewalChain!.then(undefined, () => undefined);
    try {
      if (!wasHeld) return false;
      const validUntil = await withDeadline(
        this.backend.extend(this.lock, Math.max(1, Math.ceil(ms))),
        this.operationTimeout,
        () =>
          this.backendError(
            'extend',
            `no reply within ${this.operationTimeout} ms; the lock will expire after its ttl`,
          ),
      ).catch((error: unknown) => {
        throw error instanceof LockError ? error : this.backendError('extend', String(error), error);
      });
      return validUntil !== null;
    } finally {
      this.ended(wasHeld);
    }
  }

  private doRelease(): Promise<void> {
    const wasHeld = this.currentState === 'held';
    if (wasHeld) this.currentState = 'released';
    const stopping = this.watchdog.stop();
    const renewal = this.renewing > 0 ? this.renewalChain!.then(undefined, () => undefined) : undefined;
    // Nothing to wait for (almost every release): delete at once, with no async frame around it.
    if (!stopping && !renewal) return this.deleteLock(wasHeld);
    return Promise.all([stopping, renewal]).then(() => this.deleteLock(wasHeld));
  }

  /**
   * Deletes the lock on the server if it still carries our token, with the operation deadline; then ended().
   * The deadline's timer is armed only if no reply came within a microtask: the memory backend replies at once,
   * so its releases set no timer (as in BackendCalls.waitForGrant).
   */
  private deleteLock(wasHeld: boolean): Promise<void> {
    let deletion: Promise<boolean>;
    try {
      deletion = this.backend.release(this.lock);
    } catch (error) {
      deletion = Promise.reject(error);
    }
    const timedOut = () =>
      this.backendError('release', `no reply within ${this.operationTimeout} ms; the lock will expire after its ttl`);
    return withLazyDeadline(deletion, this.operationTimeout, timedOut).then(
      () => this.ended(wasHeld),
      (error: unknown) => {
        this.ended(wasHeld);
        // A lost lock may still carry our token on the server (e.g. after a network cut): clear it if so, quietly.
        if (wasHeld) throw error instanceof LockError ? error : this.backendError('release', String(error), error);
      },
    );
  }

  private ended(wasHeld: boolean): void {
    this.stopObserving?.();
    this.notices.ended(wasHeld);
    this.onEnd(this);
  }

  /** @internal The watchdog's renewal, at the current ttl. */
  [RENEW](): Promise<RenewOutcome> {
    return this.renew(this.ttl);
  }

  /** @internal ms of validity left, for the watchdog. */
  [VALIDITY_LEFT](): number {
    return this.validUntil - monotonicNow();
  }

  /** Serialised: a manual extend and a watchdog tick never run at once. */
  private renew(ttl: number, onTransient?: (error: unknown) => void): Promise<RenewOutcome> {
    // Nothing in flight (every watchdog tick, in practice): start at once, with no promises to chain.
    const after = this.renewing > 0 ? this.renewalChain : undefined;
    this.renewing += 1;
    if (!after) return (this.renewalChain = this.renewOnce(ttl, onTransient));
    const run = () => this.renewOnce(ttl, onTransient);
    return (this.renewalChain = after.then(run, run));
  }

  /** Counts itself out of `renewing` when done. */
  private async renewOnce(ttl: number, onTransient?: (error: unknown) => void): Promise<RenewOutcome> {
    try {
      if (this.currentState !== 'held') return 'lost';
      const remaining = this.validUntil - monotonicNow();
      // The loop may have been blocked past the validity: someone else may own the key by now. Never extend then.
      if (remaining <= 0) {
        this.markLost(
          this.holdLimitReached
            ? `it was held for maxHold=${this.maxHold} ms, so the watchdog stopped renewing it and it expired`
            : 'its validity ended before it could be renewed (the event loop was blocked or renewals kept failing)',
        );
        return 'lost';
      }
      if (monotonicNow() - this.acquiredAtMonotonic >= this.maxHold) {
        this.holdLimitReached = true;
        return 'expire';
      }
      let validUntil: number | null;
      try {
        validUntil = await this.extender.extend(this.lock, ttl, this.validUntil);
      } catch (error) {
        if (this.currentState !== 'held') return 'lost';
        if (monotonicNow() >= this.validUntil) {
          this.markLost('the server could not be reached before its validity ended', error);
          return 'lost';
        }
        const failure = error instanceof LockError ? error : this.backendError('extend', String(error), error);
        onTransient?.(failure);
        this.emitAtRisk(failure);
        return 'retry';
      }
      if (this.currentState !== 'held') return 'lost';
      if (validUntil === null) {
        this.markLost('the server no longer has it: it expired, was deleted, or its lease was revoked');
        return 'lost';
      }
      this.validUntil = validUntil;
      this.renewalCount += 1;
      // Nobody listening (the usual case with many held locks): no renewal object to build.
      if (this.notices.watched) {
        this.publish({
          type: 'renewed',
          key: this.key,
          fencingToken: this.fencingToken,
          expiresAt: this.expiresAt,
          ttl,
          renewalCount: this.renewalCount,
        });
      }
      return 'renewed';
    } finally {
      this.renewing -= 1;
    }
  }

  private markLost(reason: string, cause?: unknown): void {
    if (this.currentState !== 'held') return;
    this.currentState = 'lost';
    void this.watchdog.stop();
    this.stopObserving?.();
    this.notices.lost(new LockLostError(this.key, reason, cause === undefined ? undefined : { cause }));
    this.onEnd(this);
  }

  private onBackendEvent(event: BackendLockEvent): void {
    if (this.currentState !== 'held') return;
    if (event.type === 'lost') return this.markLost(event.reason);
    if (event.type === 'at-risk') this.emitAtRisk(event.error);
  }

  private publish(renewal: LockRenewal): void {
    this.notices.renewal(renewal);
  }

  private emitAtRisk(error: Error): void {
    this.publish({
      type: 'at-risk',
      key: this.key,
      fencingToken: this.fencingToken,
      expiresAt: this.expiresAt,
      remaining: Math.max(0, Math.round(this.validUntil - monotonicNow())),
      error,
    });
  }

  private backendError(operation: string, detail: string, cause?: unknown): LockBackendError {
    return new LockBackendError(
      this.backend.kind,
      this.backend.address,
      operation,
      detail,
      cause === undefined ? undefined : { cause },
    );
  }
}
