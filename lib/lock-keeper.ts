import type { BackendLockEvent, HeldLock, LockBackend } from './backends/lock-backend.interface';
import { LockBackendError, LockError, LockLostError } from './errors';
import { backendErrorOf } from './errors/lock-backend.error';
import type { LockRenewal } from './lock-renewal';
import { LockLifecycleListener, LockNotices } from './lock-notices';
import { monotonicNow, toEpochMs } from './utils/clock';
import { driftAllowance } from './utils/drift-allowance';
import { checkTtl } from './utils/validate';
import { settleWithDeadline, withDeadline } from './utils/deadline';
import { ExtendBatcher } from './watchdog/extend-batcher';
import { RenewalScheduler } from './watchdog/renewal-scheduler';
import { Renewable, RENEW, VALIDITY_LEFT, Watchdog } from './watchdog/watchdog';

export type LockState = 'held' | 'released' | 'lost';

/** A validity end noticed later than this (ms) says the event loop was blocked, not merely busy. */
const BLOCKED_LOOP_MS = 100;

/** 'expire': maxHold passed, so stop renewing and let the lock run out. */
type RenewOutcome = 'renewed' | 'retry' | 'lost' | 'expire';

/** @internal What LockService hands a new handle. */
export interface LockHandleInit<Handle = unknown> {
  backend: LockBackend;
  lock: HeldLock;
  validUntil: number;
  renewInterval: number;
  operationTimeout: number;
  /** ms after which the watchdog stops renewing (Infinity: never). */
  maxHold: number;
  onEnd: (handle: Handle) => void;
  /** Told of renewals and how the lock ended, without an rxjs subscription per handle (LockService's events). */
  lifecycle?: LockLifecycleListener<Handle>;
  /** Handed back to `lifecycle` with every call: what the listener needs about this handle, without a lookup. */
  lifecycleContext?: unknown;
}

/**
 * @internal The bookkeeping behind one LockHandle: its state and validity, the watchdog's renewals (it is the
 * watchdog's Renewable), loss detection, and ending the lock on the server. The handle is its public face and
 * the one thing listeners are handed; generic over it so that this file does not import the handle.
 */
export class LockKeeper<Handle extends { readonly state: string }> implements Renewable {
  /** renewals$, signal and loss listeners, each made on first use. */
  readonly notices: LockNotices<Handle>;
  state: LockState = 'held';
  /** Monotonic ms until which the lock is certainly held. */
  validUntil: number;
  ttl: number;
  readonly lock: HeldLock;
  private readonly backend: LockBackend;
  private readonly watchdog: Watchdog;
  private readonly extender: ExtendBatcher;
  private readonly operationTimeout: number;
  private readonly onEnd: (handle: Handle) => void;
  private readonly acquiredAtMonotonic = monotonicNow();
  private readonly maxHold: number;
  private holdLimitReached = false;
  private renewalCount = 0;
  /**
   * The last renewal, which the next one (and release) waits for; none before the first. A renewal that finds the
   * lock lost before its first await tells the listeners synchronously, before it is stored here: a release()
   * from a listener then has nothing in flight to wait for.
   */
  private renewalChain: Promise<RenewOutcome> | undefined;
  /** Renewals queued or running; release waits for them only when there are any. */
  private renewing = 0;
  private stopObserving: (() => void) | undefined;

  constructor(
    private readonly handle: Handle,
    init: LockHandleInit<Handle>,
  ) {
    this.backend = init.backend;
    this.lock = init.lock;
    this.ttl = init.lock.ttl;
    this.validUntil = init.validUntil;
    this.operationTimeout = init.operationTimeout;
    this.onEnd = init.onEnd;
    this.maxHold = init.maxHold;
    this.notices = new LockNotices<Handle>(handle, init.lifecycle, init.lifecycleContext);
    this.extender = ExtendBatcher.for(init.backend);
    this.watchdog = new Watchdog(this, init.renewInterval, RenewalScheduler.for(init.backend));
    this.watchdog.start();
    this.stopObserving = init.backend.observe?.(init.lock, (event) => this.onBackendEvent(event));
  }

  /** See LockHandle.extend(). */
  async extend(ttl: number): Promise<void> {
    checkTtl(ttl);
    const wholeTtl = Math.ceil(ttl);
    let failure: unknown;
    const outcome = await this.renew(wholeTtl, (error) => (failure = error));
    if (outcome === 'lost')
      throw this.notices.lostError ?? new LockLostError(this.lock.key, 'the lock was already released');
    if (outcome === 'retry') throw failure;
    if (outcome === 'expire') {
      throw new LockLostError(
        this.lock.key,
        `it has been held for maxHold=${this.maxHold} ms and may not be extended further`,
      );
    }
    if (wholeTtl !== this.ttl) {
      this.ttl = wholeTtl;
      this.watchdog.setInterval(wholeTtl / 3);
    }
  }

  /** See LockHandle.release(): called once. */
  release(): Promise<void> {
    const wasHeld = this.state === 'held';
    if (wasHeld) this.state = 'released';
    const stopping = this.watchdog.stop();
    const renewal = this.renewing > 0 ? this.renewalChain?.then(undefined, () => undefined) : undefined;
    // Nothing to wait for (almost every release): delete at once, with no async frame around it.
    if (!stopping && !renewal) return this.deleteLock(wasHeld);
    return Promise.all([stopping, renewal]).then(() => this.deleteLock(wasHeld));
  }

  /** See LockHandle[LEAVE_TO_EXPIRE]: called once, instead of release(). */
  async leave(ms: number): Promise<boolean> {
    const wasHeld = this.state === 'held';
    if (wasHeld) this.state = 'released';
    const stopping = this.watchdog.stop();
    if (stopping) await stopping;
    if (this.renewing > 0) await this.renewalChain?.then(undefined, () => undefined);
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
    return settleWithDeadline(
      deletion,
      this.operationTimeout,
      timedOut,
      () => this.ended(wasHeld),
      (error: unknown) => {
        this.ended(wasHeld);
        // A lost lock may still carry our token on the server (e.g. after a network cut): clear it if so, quietly.
        if (wasHeld) throw error instanceof LockError ? error : this.backendError('release', String(error), error);
      },
      /* lazy timer */ true,
    );
  }

  private ended(wasHeld: boolean): void {
    this.stopObserving?.();
    this.notices.ended(wasHeld);
    this.onEnd(this.handle);
  }

  /**
   * @internal The watchdog's renewal, at the current ttl. `alongside`: one is still in flight (a slow server), so
   * this one goes out now instead of after it; the chain still covers both, so release and extend wait for both.
   */
  [RENEW](alongside: boolean): Promise<RenewOutcome> {
    // The last renewal has gone a whole period unanswered (a silent or slow server): say so before it is too late.
    if (alongside && this.state === 'held') {
      this.emitAtRisk(
        this.backendError(
          'extend',
          'a renewal has had no answer for a whole renewal period; another goes out beside it',
        ),
      );
    }
    return this.renew(this.ttl, undefined, alongside);
  }

  /**
   * Reports the loss now if the validity has run out and no renewal is in flight to say otherwise (the watchdog
   * would find the same at its next tick: a lock is never extended once its validity ended).
   */
  noticeExpiry(): void {
    if (this.state === 'held' && this.renewing === 0 && monotonicNow() >= this.validUntil)
      this.markLost(this.expiryReason());
  }

  /** @internal ms of validity left, for the watchdog. */
  [VALIDITY_LEFT](): number {
    return this.validUntil - monotonicNow();
  }

  /** Serialised: a manual extend and a watchdog tick never run at once. */
  private renew(ttl: number, onTransient?: (error: unknown) => void, alongside = false): Promise<RenewOutcome> {
    // Nothing in flight (every watchdog tick, in practice): start at once, with no promises to chain.
    const after = this.renewing > 0 ? this.renewalChain : undefined;
    this.renewing += 1;
    if (!after) return (this.renewalChain = this.renewOnce(ttl, onTransient));
    if (alongside) {
      // Sent now, but the chain settles only after both, so a later extend or release still waits for it.
      const renewal = this.renewOnce(ttl, onTransient);
      const settled = () => renewal;
      this.renewalChain = after.then(settled, settled);
      return renewal;
    }
    const run = () => this.renewOnce(ttl, onTransient);
    return (this.renewalChain = after.then(run, run));
  }

  /** Counts itself out of `renewing` when done. */
  private async renewOnce(ttl: number, onTransient?: (error: unknown) => void): Promise<RenewOutcome> {
    try {
      if (this.state !== 'held') return 'lost';
      const remaining = this.validUntil - monotonicNow();
      // The loop may have been blocked past the validity: someone else may own the key by now. Never extend then.
      if (remaining <= 0) {
        this.markLost(this.expiryReason());
        return 'lost';
      }
      const holdLeft = this.maxHold - (monotonicNow() - this.acquiredAtMonotonic);
      if (this.holdLimitReached || holdLeft <= 0) {
        this.holdLimitReached = true;
        return 'expire';
      }
      // Never past maxHold: the last renewal before it asks only for what is left of it, and is the last one
      // (renewing again before a validity ends at maxHold would only ask for less and less, ever sooner).
      const renewFor = Math.min(ttl, Math.ceil(holdLeft));
      let validUntil: number | null;
      try {
        // Waits until the validity ends, as it stands then: a renewal beside this one may move it meanwhile.
        validUntil = await this.extender.extend(this.lock, renewFor, this);
      } catch (error) {
        if (this.state !== 'held') return 'lost';
        if (monotonicNow() >= this.validUntil) {
          // A LockLostError: the batcher dropped the renewal unsent, its validity having ended first.
          if (error instanceof LockLostError) this.markLost(this.expiryReason());
          else this.markLost('the server could not be reached before its validity ended', error);
          return 'lost';
        }
        const failure = error instanceof LockError ? error : this.backendError('extend', String(error), error);
        onTransient?.(failure);
        this.emitAtRisk(failure);
        return 'retry';
      }
      if (this.state !== 'held') return 'lost';
      if (validUntil === null) {
        this.markLost('the server no longer has it: it expired, was deleted, or its lease was revoked');
        return 'lost';
      }
      // An answer that leaves no validity came back too late (the event loop was blocked while it waited to be
      // read, or the server took longer than the ttl): the lock may have expired on the server meanwhile, so it is
      // a failure, never a renewal.
      const answeredAt = monotonicNow();
      if (validUntil <= answeredAt) {
        if (answeredAt >= this.validUntil) {
          this.markLost(this.expiryReason());
          return 'lost';
        }
        // A renewal beside this one kept the lock: this answer was only the later of the two.
        const failure = this.backendError('extend', 'the answer came back after the validity it gave had ended');
        onTransient?.(failure);
        this.emitAtRisk(failure);
        return 'retry';
      }
      // At the same ttl a renewal only moves the expiry forward on the server, so an answer that would move the
      // validity back is an earlier-sent one answering after a later one (two in flight): keep the later one's.
      if (ttl !== this.ttl || validUntil > this.validUntil) this.validUntil = validUntil;
      if (renewFor < ttl) this.holdLimitReached = true;
      this.renewalCount += 1;
      // Nobody listening (the usual case with many held locks): no renewal object to build.
      if (this.notices.watched) {
        this.publish({
          type: 'renewed',
          key: this.lock.key,
          fencingToken: this.lock.fencingToken,
          expiresAt: toEpochMs(this.validUntil),
          ttl,
          renewalCount: this.renewalCount,
        });
      }
      return 'renewed';
    } finally {
      this.renewing -= 1;
    }
  }

  /**
   * Why the validity ran out unrenewed. A loop blocked past maxHold still names maxHold: the lock would not have been
   * renewed past it anyway, so that is the limit the caller hit.
   */
  private expiryReason(): string {
    // Validity reaching maxHold (less the drift allowance taken off every grant) means maxHold bounded it: the
    // grant and the last renewal ask for no more than what is left of it, so that is the usual way it ends.
    if (
      this.holdLimitReached ||
      this.validUntil - this.acquiredAtMonotonic >= this.maxHold - driftAllowance(this.maxHold) - 1
    ) {
      const late = monotonicNow() - this.validUntil;
      const blocked =
        late > BLOCKED_LOOP_MS ? ` (the event loop was blocked: noticed ${Math.round(late)} ms late)` : '';
      return `it was held for maxHold=${this.maxHold} ms, so the watchdog stopped renewing it and it expired${blocked}`;
    }
    return 'its validity ended before it could be renewed (the event loop was blocked or renewals kept failing)';
  }

  private markLost(reason: string, cause?: unknown): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    void this.watchdog.stop();
    this.stopObserving?.();
    this.backend.abandon?.(this.lock);
    this.notices.lost(new LockLostError(this.lock.key, reason, cause === undefined ? undefined : { cause }));
    this.onEnd(this.handle);
  }

  private onBackendEvent(event: BackendLockEvent): void {
    if (this.state !== 'held') return;
    // Past its validity, the keeper knows better why (maxHold, a blocked loop) than a backend that saw it expire.
    if (event.type === 'lost')
      return this.markLost(monotonicNow() >= this.validUntil ? this.expiryReason() : event.reason);
    if (event.type === 'at-risk') this.emitAtRisk(event.error);
  }

  private publish(renewal: LockRenewal): void {
    this.notices.renewal(renewal);
  }

  private emitAtRisk(error: Error): void {
    this.publish({
      type: 'at-risk',
      key: this.lock.key,
      fencingToken: this.lock.fencingToken,
      expiresAt: toEpochMs(this.validUntil),
      remaining: Math.max(0, Math.round(this.validUntil - monotonicNow())),
      error,
    });
  }

  private backendError(operation: string, detail: string, cause?: unknown): LockBackendError {
    return backendErrorOf(this.backend, operation, detail, cause);
  }
}
