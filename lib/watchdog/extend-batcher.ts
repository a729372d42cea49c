import type { HeldLock, LockBackend } from '../backends/lock-backend.interface';
import { LockBackendError } from '../errors';
import { MAX_TIMER_DELAY, monotonicNow } from '../utils/clock';
import { withDeadline } from '../utils/deadline';

/** One extend waiting for its batch; it is also the `{ lock, ttl }` item handed to `extendMany`. */
interface PendingExtend {
  readonly lock: HeldLock;
  readonly ttl: number;
  /** Monotonic ms after which the caller stops waiting for the answer. */
  readonly deadline: number;
  /** Monotonic ms when the call was made, for the timeout's message. */
  readonly madeAt: number;
  settled: boolean;
  resolve(validUntil: number | null): void;
  reject(error: unknown): void;
}

const batchers = new WeakMap<LockBackend, ExtendBatcher>();

/**
 * Gathers the extend calls made in one turn of the event loop and hands them to the backend's
 * `extendMany` (one pipeline or request) when it has one; otherwise sends them one by one.
 *
 * Each call has a deadline (a watchdog's is the end of the lock's validity). A batch watches all of its
 * deadlines with one timer, armed for the earliest: with thousands of locks held, a timer per renewal was
 * about a fifth of a renewal's client CPU.
 */
export class ExtendBatcher {
  private pending: PendingExtend[] = [];
  private flushScheduled = false;

  private constructor(private readonly backend: LockBackend) {}

  static for(backend: LockBackend): ExtendBatcher {
    let batcher = batchers.get(backend);
    if (!batcher) {
      batcher = new ExtendBatcher(backend);
      batchers.set(backend, batcher);
    }
    return batcher;
  }

  /**
   * The backend's extend of `lock` to `ttl`; rejects with a LockBackendError when no answer came by `deadline`
   * (monotonic ms). A late answer is then ignored.
   */
  extend(lock: HeldLock, ttl: number, deadline: number): Promise<number | null> {
    const madeAt = monotonicNow();
    if (!this.backend.extendMany) {
      return withDeadline(this.backend.extend(lock, ttl), deadline - madeAt, () => this.timedOut(deadline - madeAt));
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ lock, ttl, deadline, madeAt, settled: false, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        // After the current microtasks: every watchdog fired by this tick has made its call by then.
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.pending;
    this.pending = [];
    const deadlines = new BatchDeadlines(batch, (item) => item.reject(this.timedOut(item.deadline - item.madeAt)));
    const answered = (results: readonly (number | null | Error)[]) => {
      deadlines.stop();
      for (let index = 0; index < batch.length; index++) {
        const item = batch[index];
        if (item.settled) continue;
        item.settled = true;
        const result = results[index];
        if (result instanceof Error) item.reject(result);
        else item.resolve(result ?? null);
      }
    };
    const failed = (error: unknown) => {
      deadlines.stop();
      for (const item of batch) {
        if (item.settled) continue;
        item.settled = true;
        item.reject(error);
      }
    };
    if (batch.length === 1) {
      const [only] = batch;
      this.backend.extend(only.lock, only.ttl).then((result) => answered([result]), failed);
    } else {
      this.backend.extendMany!(batch).then(answered, failed);
    }
  }

  /** `allowed`: the ms of validity that were left when the call was made. */
  private timedOut(allowed: number): LockBackendError {
    return new LockBackendError(
      this.backend.kind,
      this.backend.address,
      'extend',
      `no reply within the ${Math.max(0, Math.round(allowed))} ms of validity left`,
    );
  }
}

/** One timer for a batch's deadlines, armed for the earliest unsettled one. */
class BatchDeadlines {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly batch: readonly PendingExtend[],
    private readonly expire: (item: PendingExtend) => void,
  ) {
    this.arm();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    let earliest = Infinity;
    for (const item of this.batch) if (!item.settled && item.deadline < earliest) earliest = item.deadline;
    if (earliest === Infinity) return;
    // Timers may fire a fraction of a millisecond early on our clock: then the check below re-arms.
    const delay = Math.min(MAX_TIMER_DELAY, Math.max(1, Math.ceil(earliest - monotonicNow())));
    this.timer = setTimeout(() => this.check(), delay);
    // The call in flight keeps the process alive if it needs to; this timer alone should not.
    this.timer.unref();
  }

  private check(): void {
    this.timer = undefined;
    const now = monotonicNow();
    for (const item of this.batch) {
      if (item.settled || item.deadline > now) continue;
      item.settled = true;
      this.expire(item);
    }
    this.arm();
  }
}
