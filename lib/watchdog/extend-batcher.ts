import type { HeldLock, LockBackend } from '../backends/lock-backend.interface';
import { LockBackendError, LockLostError } from '../errors';
import { backendErrorOf } from '../errors/lock-backend.error';
import { MAX_TIMER_DELAY, monotonicNow } from '../utils/clock';

/** One extend waiting for its batch; it is also the `{ lock, ttl }` item handed to `extendMany`. */
interface PendingExtend {
  readonly lock: HeldLock;
  readonly ttl: number;
  /** The caller stops waiting for the answer at its `validUntil` (monotonic ms), read when the timer fires. */
  readonly until: ValidityOwner;
  /** Monotonic ms when the call was made, for the timeout's message. */
  readonly madeAt: number;
  settled: boolean;
  resolve(validUntil: number | null): void;
  reject(error: unknown): void;
}

/**
 * Whose validity bounds the wait: a lock's keeper, read at expiry rather than when the call was made, because
 * another renewal of the same lock (two in flight on a slow server) may have moved it later meanwhile.
 */
export interface ValidityOwner {
  readonly validUntil: number;
}

const batchers = new WeakMap<LockBackend, ExtendBatcher>();

const VALIDITY_ENDED_UNSENT = 'its validity ended before its renewal could be sent (the event loop was blocked)';

/**
 * Gathers the extend calls made in one turn of the event loop and hands them to the backend's
 * `extendMany` (one pipeline or request) when it has one; otherwise sends them one by one.
 *
 * Each call waits until the end of its lock's validity. A batch watches all of its deadlines with one timer,
 * armed for the earliest: with thousands of locks held, a timer per renewal was about a fifth of a renewal's
 * client CPU. A backend without `extendMany` gets each call at once, watched the same way.
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
   * The backend's extend of `lock` to `ttl`; rejects with a LockBackendError when no answer came by
   * `until.validUntil` (monotonic ms). A late answer is then ignored.
   */
  extend(lock: HeldLock, ttl: number, until: ValidityOwner): Promise<number | null> {
    const madeAt = monotonicNow();
    return new Promise((resolve, reject) => {
      const item: PendingExtend = { lock, ttl, until, madeAt, settled: false, resolve, reject };
      if (!this.backend.extendMany) return this.send([item]);
      this.pending.push(item);
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        // After the current microtasks: every watchdog fired by this tick has made its call by then.
        setImmediate(() => this.flush());
      }
    });
  }

  /**
   * Sends what gathered, except the extends whose validity ended while they waited for this turn (the event loop
   * was blocked in between): someone else may hold the key by now, and an extend sent late would only keep it
   * blocked longer (with a lock-delay). Those reject with a LockLostError.
   */
  private flush(): void {
    this.flushScheduled = false;
    const now = monotonicNow();
    const batch: PendingExtend[] = [];
    for (const item of this.pending) {
      if (item.until.validUntil > now) batch.push(item);
      else {
        item.settled = true;
        item.reject(new LockLostError(item.lock.key, VALIDITY_ENDED_UNSENT));
      }
    }
    this.pending = [];
    if (batch.length > 0) this.send(batch);
  }

  private send(batch: PendingExtend[]): void {
    const deadlines = new BatchDeadlines(batch, (item) =>
      item.reject(this.timedOut(item.until.validUntil - item.madeAt)),
    );
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
    try {
      if (batch.length === 1) {
        const [only] = batch;
        this.backend.extend(only.lock, only.ttl).then((result) => answered([result]), failed);
      } else {
        this.backend.extendMany!(batch).then(answered, failed);
      }
    } catch (error) {
      failed(error);
    }
  }

  /** `allowed`: the ms from the call to the end of the validity it waited for. */
  private timedOut(allowed: number): LockBackendError {
    return backendErrorOf(
      this.backend,
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
    for (const item of this.batch)
      if (!item.settled && item.until.validUntil < earliest) earliest = item.until.validUntil;
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
      if (item.settled || item.until.validUntil > now) continue;
      item.settled = true;
      this.expire(item);
    }
    this.arm();
  }
}
