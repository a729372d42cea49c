import { monotonicNow } from '../utils/clock';
import { LIST_SLOT } from '../utils/slot-list';
import { RenewalScheduler, ScheduledRenewal } from './renewal-scheduler';

/** Renewable's methods are symbols, so that they stay out of view on the object that implements them. */
export const RENEW = Symbol('Renewable.renew');
export const VALIDITY_LEFT = Symbol('Renewable.validityLeft');

/** How many times the last renewal's latency a renewal leaves itself before the validity ends. */
const LATENCY_ROOM = 1.5;

/**
 * What the watchdog keeps alive: one renewal attempt at a time, and how much validity is left. A LockKeeper is
 * its own Renewable: an adapter object and two closures per grant would be garbage on every lock.
 */
export interface Renewable {
  /** One renewal. 'retry' = a transient failure while validity remains; 'expire' = stop renewing, check back at expiry. */
  [RENEW](): Promise<'renewed' | 'retry' | 'lost' | 'expire'>;
  /** ms of validity left on the monotonic clock. */
  [VALIDITY_LEFT](): number;
}

/**
 * Renews one lock every `interval` ms until stopped. Renewals never overlap: the next one is scheduled only
 * after the previous settled. The timing itself lives in the backend's shared RenewalScheduler (one unref'd
 * timer for all held locks), so ten thousand held locks do not mean ten thousand timers.
 */
export class Watchdog implements ScheduledRenewal {
  /** Kept by the RenewalScheduler. */
  [LIST_SLOT] = -1;
  dueAt = Infinity;
  slack = 0;
  private inFlight: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly target: Renewable,
    private interval: number,
    private readonly scheduler: RenewalScheduler,
  ) {}

  /** A grant may carry less validity than a full ttl (an etcd session lease kept alive a moment before): same rule as after a renewal. */
  start(): void {
    this.schedule(Math.min(this.interval, this.target[VALIDITY_LEFT]() / 2));
  }

  /** Used when a manual extend changed the ttl, so the period follows it. */
  setInterval(interval: number): void {
    this.interval = interval;
    if (!this.stopped && !this.inFlight) this.schedule(interval);
  }

  /** Stops renewing; returns a promise only when a renewal is in flight, to wait for it (release never races a renewal). */
  stop(): Promise<void> | undefined {
    this.stopped = true;
    this.scheduler.cancel(this);
    return this.inFlight?.then(
      () => undefined,
      () => undefined,
    );
  }

  /** Called by the scheduler when this lock's renewal is due. */
  fire(): void {
    if (this.stopped || this.inFlight) return;
    this.inFlight = this.runOnce();
  }

  /** Clears `inFlight` itself: a `.finally()` here would be two more promises per renewal. */
  private async runOnce(): Promise<void> {
    let outcome: 'renewed' | 'retry' | 'lost' | 'expire';
    const startedAt = monotonicNow();
    try {
      outcome = await this.target[RENEW]();
    } catch {
      outcome = 'retry';
    } finally {
      this.inFlight = undefined;
    }
    if (this.stopped) return;
    if (outcome === 'renewed') this.schedule(this.nextDelay(monotonicNow() - startedAt));
    else if (outcome === 'expire') this.schedule(Math.max(0, this.target[VALIDITY_LEFT]()));
    // Retry sooner than the normal period, but in proportion to what is left so a short outage is ridden out.
    else if (outcome === 'retry')
      this.schedule(Math.min(this.interval, Math.max(25, this.target[VALIDITY_LEFT]() / 4)));
  }

  /**
   * After a renewal that took `took` ms: the period, or sooner when little validity is left. A backend may grant
   * less than asked (ZooKeeper caps it at the session timeout): renew before half of it is gone. On a slow
   * server, the next renewal must also leave room to come back at the same latency and then some: with a ttl
   * of 3 s and renewals taking 1 s, waiting a full period would let the validity run out in flight.
   */
  private nextDelay(took: number): number {
    const left = this.target[VALIDITY_LEFT]();
    return Math.max(0, Math.min(this.interval, left / 2, left - LATENCY_ROOM * took));
  }

  private schedule(delay: number): void {
    if (!this.stopped) this.scheduler.schedule(this, delay, this.interval);
  }
}
