import { monotonicNow } from '../utils/clock';
import { LIST_SLOT } from '../utils/slot-list';
import { RenewalScheduler, ScheduledRenewal } from './renewal-scheduler';

/** Renewable's methods are symbols, so that they stay out of view on the object that implements them. */
export const RENEW = Symbol('Renewable.renew');
export const VALIDITY_LEFT = Symbol('Renewable.validityLeft');

/** How many times the recent renewal latency (the lock's last, or its backend's) a renewal leaves itself before the validity ends. */
const LATENCY_ROOM = 1.5;

/**
 * At most this many renewals of one lock in flight. A second goes out only when the first has gone unanswered
 * for a whole period (a slow server), as etcd's own keepalive loop sends on schedule whatever the answers do:
 * with a ttl of 3 s and answers taking 2 s, renewals one after the other would each come back too late.
 */
const MAX_IN_FLIGHT = 2;

/**
 * What the watchdog keeps alive, and how much validity is left. A LockKeeper is its own Renewable: an adapter
 * object and two closures per grant would be garbage on every lock.
 */
export interface Renewable {
  /**
   * One renewal. 'retry' = a transient failure while validity remains; 'expire' = stop renewing, check back at
   * expiry. `alongside`: another renewal is still in flight, and this one must not wait for it.
   */
  [RENEW](alongside: boolean): Promise<'renewed' | 'retry' | 'lost' | 'expire'>;
  /** ms of validity left on the monotonic clock. */
  [VALIDITY_LEFT](): number;
}

/**
 * Renews one lock every `interval` ms until stopped. The next renewal is scheduled when the previous one
 * settles; only a renewal unanswered for a whole period gets a second one beside it (MAX_IN_FLIGHT). The timing
 * itself lives in the backend's shared RenewalScheduler (one unref'd timer for all held locks), so ten thousand
 * held locks do not mean ten thousand timers.
 */
export class Watchdog implements ScheduledRenewal {
  /** Kept by the RenewalScheduler. */
  [LIST_SLOT] = -1;
  dueAt = Infinity;
  slack = 0;
  /** The renewals in flight (all of them, when two are); cleared by runOnce itself. */
  private flights: Promise<unknown> | undefined;
  private inFlight = 0;
  private stopped = false;

  constructor(
    private readonly target: Renewable,
    private interval: number,
    private readonly scheduler: RenewalScheduler,
  ) {}

  /** A grant may carry less validity than a full ttl (an etcd session lease kept alive a moment before): same rule as after a renewal. */
  start(): void {
    this.schedule(this.nextDelay(0));
  }

  /** Used when a manual extend changed the ttl, so the period follows it. */
  setInterval(interval: number): void {
    this.interval = interval;
    if (!this.stopped && this.inFlight === 0) this.schedule(interval);
  }

  /** Stops renewing; returns a promise only when a renewal is in flight, to wait for it (release never races a renewal). */
  stop(): Promise<void> | undefined {
    this.stopped = true;
    this.scheduler.cancel(this);
    return this.flights?.then(
      () => undefined,
      () => undefined,
    );
  }

  /** Called by the scheduler when this lock's renewal is due, or when the one in flight has gone a period unanswered. */
  fire(): void {
    if (this.stopped || this.inFlight >= MAX_IN_FLIGHT) return;
    const alongside = this.inFlight > 0;
    const flight = this.runOnce(alongside);
    this.flights = alongside ? Promise.all([this.flights, flight]) : flight;
    // Replaced by the answer's own schedule when it comes within the period, as it almost always does.
    if (this.inFlight < MAX_IN_FLIGHT) this.schedule(this.interval);
  }

  /** Clears `flights` itself once none is in flight: a `.finally()` here would be two more promises per renewal. */
  private async runOnce(alongside: boolean): Promise<void> {
    let outcome: 'renewed' | 'retry' | 'lost' | 'expire';
    const startedAt = monotonicNow();
    this.inFlight += 1;
    try {
      outcome = await this.target[RENEW](alongside);
    } catch {
      outcome = 'retry';
    } finally {
      this.inFlight -= 1;
      if (this.inFlight === 0) this.flights = undefined;
    }
    const took = monotonicNow() - startedAt;
    // Answers only: a failure's time (a refused connection, a deadline) says nothing of how long an answer takes.
    if (outcome === 'renewed') this.scheduler.noteLatency(took);
    if (this.stopped) return;
    if (outcome === 'renewed') this.schedule(this.nextDelay(took));
    else if (outcome === 'expire') this.schedule(Math.max(0, this.target[VALIDITY_LEFT]()));
    // Retry sooner than the normal period, but in proportion to what is left so a short outage is ridden out.
    else if (outcome === 'retry')
      this.schedule(Math.min(this.interval, Math.max(25, this.target[VALIDITY_LEFT]() / 4)));
  }

  /**
   * After a grant, or a renewal that took `took` ms: the period, or sooner when little validity is left. A
   * backend may grant less than asked (ZooKeeper caps it at the session timeout): renew before half of it is
   * gone. On a slow server, the next renewal must also leave room to come back at the latency renewals on this
   * backend have lately had, and then some: with a ttl of 3 s and renewals taking 1 s, waiting a full period
   * would let the validity run out in flight.
   */
  private nextDelay(took: number): number {
    const left = this.target[VALIDITY_LEFT]();
    const latency = Math.max(took, this.scheduler.latency);
    return Math.max(0, Math.min(this.interval, left / 2, left - LATENCY_ROOM * latency));
  }

  private schedule(delay: number): void {
    if (!this.stopped) this.scheduler.schedule(this, delay, this.interval);
  }
}
