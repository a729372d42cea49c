import type { HeldLock, LockBackend } from '../backends/lock-backend.interface';

interface PendingExtend {
  lock: HeldLock;
  ttl: number;
  resolve(validUntil: number | null): void;
  reject(error: unknown): void;
}

const batchers = new WeakMap<LockBackend, ExtendBatcher>();

/**
 * Gathers the extend calls made in one turn of the event loop and hands them to the backend's
 * `extendMany` (one pipeline or request) when it has one; otherwise sends them one by one.
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

  extend(lock: HeldLock, ttl: number): Promise<number | null> {
    if (!this.backend.extendMany) return this.backend.extend(lock, ttl);
    return new Promise((resolve, reject) => {
      this.pending.push({ lock, ttl, resolve, reject });
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
    if (batch.length === 1) {
      const [only] = batch;
      this.backend.extend(only.lock, only.ttl).then(only.resolve, only.reject);
      return;
    }
    this.backend.extendMany!(batch.map(({ lock, ttl }) => ({ lock, ttl }))).then(
      (results) =>
        batch.forEach((item, index) => {
          const result = results[index];
          if (result instanceof Error) item.reject(result);
          else item.resolve(result ?? null);
        }),
      (error) => batch.forEach((item) => item.reject(error)),
    );
  }
}
