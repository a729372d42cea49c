import type { LockBackend } from '../backends/lock-backend.interface';
import { runInScopeOf } from '../context/lock-context';
import type { ElectionBackend } from '../leader-election/election-backend.interface';
import { monotonicNow } from '../utils/clock';
import { SlotList, Slotted } from '../utils/slot-list';

/**
 * Something the scheduler runs when its renewal is due. The scheduler keeps its timing on it (no entry object
 * per schedule): this is set and cleared on every grant and release.
 */
export interface ScheduledRenewal extends Slotted {
  fire(): void;
  /** Monotonic ms when the renewal is due; set by the scheduler. */
  dueAt: number;
  /** How early it may fire, so renewals due close together leave in one batch; set by the scheduler. */
  slack: number;
}

/** A renewal may run this share of its period early; 10 % of ttl/3 still leaves ample validity. */
const EARLY_SHARE = 0.1;
const MAX_EARLY_MS = 1_000;
/** The share of each faster answer taken into the recent latency. */
const LATENCY_DECAY = 0.2;
const schedulers = new WeakMap<LockBackend | ElectionBackend, RenewalScheduler>();

/**
 * One timer for every watchdog on a backend, however many locks are held. On each tick it fires every
 * renewal that is due, plus those due within their slack, so their extend calls reach the backend together
 * and can go out as one batch (see ExtendBatcher). The timer is unref'd.
 */
export class RenewalScheduler {
  private readonly scheduled = new SlotList<ScheduledRenewal>();
  private timer: NodeJS.Timeout | undefined;
  private timerDueAt = Infinity;
  /**
   * How long this backend's renewals take lately (ms): up at once to a slow answer, down gradually. Latency
   * belongs to the server and the connection, not to one lock, so a lock granted now plans its first renewal
   * with what the others saw.
   */
  private recentLatency = 0;

  /** One per lock backend, and one per election backend (whose leaderships renew on the same watchdog). */
  static for(backend: LockBackend | ElectionBackend): RenewalScheduler {
    let scheduler = schedulers.get(backend);
    if (!scheduler) {
      scheduler = new RenewalScheduler();
      schedulers.set(backend, scheduler);
    }
    return scheduler;
  }

  get size(): number {
    return this.scheduled.size;
  }

  get latency(): number {
    return this.recentLatency;
  }

  /** A renewal on this backend was answered `took` ms after its call. */
  noteLatency(took: number): void {
    this.recentLatency =
      took >= this.recentLatency ? took : this.recentLatency * (1 - LATENCY_DECAY) + took * LATENCY_DECAY;
  }

  schedule(renewal: ScheduledRenewal, delay: number, period: number): void {
    const dueAt = monotonicNow() + Math.max(0, delay);
    renewal.dueAt = dueAt;
    renewal.slack = Math.min(period * EARLY_SHARE, MAX_EARLY_MS);
    this.scheduled.add(renewal);
    if (dueAt < this.timerDueAt) this.arm(dueAt);
  }

  /**
   * Leaves the timer armed even when nothing is left: acquire/release cycles would otherwise set and clear a
   * timer each time. A tick that finds nothing due simply does not re-arm.
   */
  cancel(renewal: ScheduledRenewal): void {
    this.scheduled.delete(renewal);
  }

  private arm(dueAt: number): void {
    this.disarm();
    this.timerDueAt = dueAt;
    // Outside every lock scope: the timer serves every call's locks, not the one that happened to arm it.
    this.timer = setTimeout(() => runInScopeOf(undefined, () => this.tick()), Math.max(0, dueAt - monotonicNow()));
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerDueAt = Infinity;
  }

  private tick(): void {
    this.timer = undefined;
    this.timerDueAt = Infinity;
    const now = monotonicNow();
    const due: ScheduledRenewal[] = [];
    let next = Infinity;
    for (const renewal of this.scheduled.toArray()) {
      if (renewal.dueAt - renewal.slack <= now) due.push(renewal);
      else if (renewal.dueAt < next) next = renewal.dueAt;
    }
    for (const renewal of due) this.scheduled.delete(renewal);
    if (next < Infinity) this.arm(next);
    // Most urgent first: a batch may go out in parts (etcd sends 128 keys per request), and under load the
    // later parts answer later.
    due.sort((a, b) => a.dueAt - b.dueAt);
    for (const renewal of due) renewal.fire();
  }
}
