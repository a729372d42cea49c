import { Observable, Subject } from 'rxjs';
import type { BackendLockEvent } from '../backends/lock-backend.interface';
import { runInScopeOf } from '../context/lock-context';
import { LockBackendError, LockLostError } from '../errors';
import { monotonicNow, toEpochMs } from '../utils/clock';
import { withDeadline, withMovingDeadline } from '../utils/deadline';
import { RenewalScheduler } from '../watchdog/renewal-scheduler';
import { RENEW, Renewable, VALIDITY_LEFT, Watchdog } from '../watchdog/watchdog';
import type { ElectionBackend, ElectionGrant } from './election-backend.interface';

export type LeadershipState = 'leading' | 'resigned' | 'lost';

/** What `Leadership.events$` emits. It errors with LockLostError when leadership is lost, and completes on resign. */
export type LeadershipEvent = LeadershipRenewedEvent | LeadershipAtRiskEvent;

export interface LeadershipRenewedEvent {
  readonly type: 'renewed';
  readonly name: string;
  readonly term: bigint;
  /** Epoch ms until which this instance certainly leads. */
  readonly expiresAt: number;
}

/**
 * Leadership may be slipping: a renewal failed, or the server connection is suspended, while validity remains.
 * Always emitted at least once before a loss, so "pause writes on at-risk" is a rule a leader can rely on.
 */
export interface LeadershipAtRiskEvent {
  readonly type: 'at-risk';
  readonly name: string;
  readonly term: bigint;
  readonly expiresAt: number;
  /** ms of validity left when this was emitted (0 when it already ran out). */
  readonly remaining: number;
  readonly error: Error;
}

/** JSON form of a Leadership: `term` as a decimal string (JSON has no bigint). */
export interface LeadershipJson {
  name: string;
  term: string;
  value: string;
  state: LeadershipState;
  expiresAt: number;
}

/** @internal What LeaderElection hands a new Leadership. */
export interface LeadershipInit {
  backend: ElectionBackend;
  name: string;
  value: string;
  ttl: number;
  grant: ElectionGrant;
  operationTimeout: number;
  onEnd: (leadership: Leadership) => void;
}

/**
 * This instance leads the election `name`. The same watchdog as a held lock's renews the leadership every ttl/3
 * (sooner on a slow server) until `resign()`. Losing it is never silent: `events$` emits `at-risk` then errors
 * with LockLostError, and `signal` aborts with that error.
 */
export class Leadership implements AsyncDisposable {
  readonly name: string;
  /**
   * Strictly increasing per election name across leaders: pass it with every write the leader makes, and have
   * the resource reject a term lower than one it has seen. That fences off a paused leader that woke up late.
   */
  readonly term: bigint;
  /** Epoch ms when this instance became leader. */
  readonly since = Date.now();

  private readonly backend: ElectionBackend;
  private readonly grant: ElectionGrant;
  private readonly ttl: number;
  private readonly operationTimeout: number;
  private readonly onEnd: (leadership: Leadership) => void;
  private readonly abortController = new AbortController();
  private readonly subject = new Subject<LeadershipEvent>();
  private currentValue: string;
  private currentState: LeadershipState = 'leading';
  private validUntil: number;
  private lostError: LockLostError | undefined;
  private atRiskSinceRenewal = false;
  private readonly watchdog: Watchdog;
  private expiryTimer: NodeJS.Timeout | undefined;
  private resigning: Promise<void> | undefined;
  private readonly stopObserving: (() => void) | undefined;

  /** @internal Created by LeaderElection. */
  constructor(init: LeadershipInit) {
    this.backend = init.backend;
    this.name = init.name;
    this.grant = init.grant;
    this.term = init.grant.term;
    this.currentValue = init.value;
    this.ttl = init.ttl;
    this.operationTimeout = init.operationTimeout;
    this.onEnd = init.onEnd;
    this.validUntil = init.grant.validUntil;
    this.events$ = new Observable<LeadershipEvent>((subscriber) => {
      // Late subscribers still learn how the leadership ended.
      if (this.lostError) return subscriber.error(this.lostError);
      if (this.currentState === 'resigned') return subscriber.complete();
      return this.subject.subscribe(subscriber);
    });
    this.stopObserving = init.backend.observeGrant?.(init.grant, (event) => this.onBackendEvent(event));
    // An object of its own, so the watchdog's symbol members stay off this public class.
    const renewable: Renewable = {
      [RENEW]: (alongside: boolean) => {
        // The last renewal has gone a whole period unanswered (a silent server): warn while validity remains,
        // as a held lock's watchdog does.
        if (alongside && this.currentState === 'leading') {
          this.atRisk(new Error('a renewal has had no answer for a whole renewal period; another goes out beside it'));
        }
        return this.renewOnce();
      },
      [VALIDITY_LEFT]: () => this.validUntil - monotonicNow(),
    };
    this.watchdog = new Watchdog(renewable, Math.max(1, Math.floor(init.ttl / 3)), RenewalScheduler.for(init.backend));
    this.armExpiry();
    this.watchdog.start();
  }

  /** Renewals and at-risk warnings; errors with LockLostError when leadership is lost; completes on resign. */
  readonly events$: Observable<LeadershipEvent>;

  /** Aborts, with the LockLostError as reason, when leadership is lost. A resign does not abort it. */
  get signal(): AbortSignal {
    return this.abortController.signal;
  }

  get state(): LeadershipState {
    return this.currentState;
  }

  /** True while leading and within validity. */
  get isLeader(): boolean {
    return this.currentState === 'leading' && monotonicNow() < this.validUntil;
  }

  /** The value this leader publishes (what observers see). */
  get value(): string {
    return this.currentValue;
  }

  /** Epoch ms until which this instance certainly leads, measured from just before the last renewal. */
  get expiresAt(): number {
    return toEpochMs(this.validUntil);
  }

  /**
   * Publishes a new value for observers, only while still leader (checked by the server).
   * Rejects with LockLostError when leadership is gone (and reports the loss), LockBackendError on a server failure.
   */
  async proclaim(value: string): Promise<void> {
    if (typeof value !== 'string')
      throw new TypeError(`proclaim() takes a string value, got ${typeof value}. JSON.stringify objects first.`);
    this.assertLeading('proclaim');
    const stillLeader = await withDeadline(this.backend.proclaim(this.grant, value), this.operationTimeout, () =>
      this.timeoutError('proclaim'),
    );
    if (!stillLeader) {
      this.lose('the server no longer has our leader entry, so the new value was not published');
      throw this.lostError!;
    }
    this.currentValue = value;
  }

  /**
   * Stops renewing, waits for a renewal in flight, then deletes our entry so the next contender leads at once.
   * Idempotent. Rejects with LockBackendError if the server could not be reached: the entry then expires after ttl.
   */
  resign(): Promise<void> {
    this.resigning ??= this.doResign();
    return this.resigning;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.resign();
  }

  toJSON(): LeadershipJson {
    return {
      name: this.name,
      term: this.term.toString(),
      value: this.currentValue,
      state: this.currentState,
      expiresAt: this.expiresAt,
    };
  }

  private async doResign(): Promise<void> {
    if (this.currentState !== 'leading') return;
    this.currentState = 'resigned';
    await this.stopTimers();
    // A renewal in flight may have found the leadership lost; then there is nothing left to delete.
    if ((this.currentState as LeadershipState) === 'lost') return;
    this.subject.complete();
    try {
      await withDeadline(this.backend.resign(this.grant), this.operationTimeout, () => this.timeoutError('resign'));
    } finally {
      this.onEnd(this);
    }
  }

  /**
   * One renewal, run by the watchdog (on the backend's shared, unref'd timer: a leader that only waits on its
   * signal does not keep the process alive by itself). 'lost' also when resign() came first: the watchdog is
   * stopped by then and schedules nothing more.
   */
  private async renewOnce(): Promise<'renewed' | 'retry' | 'lost'> {
    if (this.currentState !== 'leading') return 'lost';
    const startedAt = monotonicNow();
    // The event loop may have been blocked past our validity: someone else may have led meanwhile.
    if (startedAt >= this.validUntil)
      return this.lose(`its validity ran out before it could be renewed (ttl ${this.ttl} ms)`);
    // Waits no longer than the validity as it stands when the timer fires: a renewal beside this one may move it.
    const deadlineAt = () => Math.min(startedAt + this.operationTimeout, this.validUntil);
    try {
      const renewed = await withMovingDeadline(this.backend.renew(this.grant, this.ttl), deadlineAt, () =>
        this.timeoutError('renew'),
      );
      if (this.currentState !== 'leading') return 'lost';
      if (renewed === null)
        return this.lose('the server no longer has our leader entry (its lease or session expired, or it was deleted)');
      if (renewed <= monotonicNow()) return this.lose('its validity ran out while the renewal was under way');
      // Two renewals may be in flight (see Watchdog): a late answer to the earlier one never moves validity back.
      this.validUntil = Math.max(this.validUntil, renewed);
      this.atRiskSinceRenewal = false;
      this.armExpiry();
      runInScopeOf(undefined, () =>
        this.subject.next({ type: 'renewed', name: this.name, term: this.term, expiresAt: this.expiresAt }),
      );
      return 'renewed';
    } catch (error) {
      if (this.currentState !== 'leading') return 'lost';
      this.atRisk(error instanceof Error ? error : new Error(String(error)));
      return 'retry';
    }
  }

  private onBackendEvent(event: BackendLockEvent): void {
    if (this.currentState !== 'leading') return;
    if (event.type === 'at-risk') this.atRisk(event.error);
    else if (event.type === 'lost') this.lose(event.reason);
  }

  private atRisk(error: Error): void {
    this.atRiskSinceRenewal = true;
    const remaining = Math.max(0, Math.round(this.validUntil - monotonicNow()));
    runInScopeOf(undefined, () =>
      this.subject.next({
        type: 'at-risk',
        name: this.name,
        term: this.term,
        expiresAt: this.expiresAt,
        remaining,
        error,
      }),
    );
  }

  /** Validity runs out unless a renewal pushes it: then leadership is lost, even if a renewal hangs. */
  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    this.expiryTimer = setTimeout(
      () => this.lose(`its validity ran out (ttl ${this.ttl} ms) without a successful renewal`),
      Math.max(0, this.validUntil - monotonicNow()),
    );
    this.expiryTimer.unref();
  }

  /** Returns 'lost' for the watchdog, so renewOnce can end with it. */
  private lose(reason: string): 'lost' {
    if (this.currentState === 'lost' || this.lostError) return 'lost';
    const error = new LockLostError(
      this.name,
      `leadership of election "${this.name}" (term ${this.term}) ended: ${reason}`,
    );
    if (!this.atRiskSinceRenewal) this.atRisk(error);
    this.currentState = 'lost';
    this.lostError = error;
    // A renewal in flight (maybe the one reporting this) settles on its own: nothing waits for it here.
    void this.stopTimers();
    // Outside every lock scope, as a lock's own notices are when no call holds it (see LockNotices).
    runInScopeOf(undefined, () => {
      this.subject.error(error);
      this.abortController.abort(error);
    });
    // Our entry may still exist (validity ran out locally while the server kept it): remove it if it is still ours.
    this.backend.resign(this.grant).catch(() => undefined);
    this.onEnd(this);
    return 'lost';
  }

  /** Returns a promise when a renewal is in flight, to wait for it (resign never races a renewal). */
  private stopTimers(): Promise<void> | undefined {
    clearTimeout(this.expiryTimer);
    this.stopObserving?.();
    return this.watchdog.stop();
  }

  private assertLeading(operation: string): void {
    if (this.lostError) throw this.lostError;
    if (this.currentState !== 'leading') {
      throw new LockLostError(this.name, `${operation}() was called after resign(); campaign again to lead`);
    }
  }

  private timeoutError(operation: string): LockBackendError {
    return new LockBackendError(
      this.backend.kind,
      this.backend.address,
      `election ${operation}`,
      `no reply within ${this.operationTimeout} ms`,
    );
  }
}
