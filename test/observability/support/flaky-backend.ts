import type {
  AcquireRequest,
  BackendInspection,
  HeldLock,
  LockBackend,
  LockGrant,
} from '../../../lib/backends/lock-backend.interface';
import { MemoryLockBackend } from '../../../lib/backends/memory/memory-lock.backend';

/**
 * The memory backend with faults switched on by the test, to drive at-risk renewals and failed acquisitions
 * through LockService. What a real server does is tested against real servers elsewhere.
 */
export class FlakyBackend implements LockBackend {
  readonly kind = 'memory';
  readonly address = 'in-process';
  readonly inner = new MemoryLockBackend();
  /** Thrown by extend() while set. */
  extendError: Error | undefined;
  /** Thrown by tryAcquire()/acquire() while set. */
  acquireError: Error | undefined;

  async tryAcquire(request: AcquireRequest): Promise<LockGrant | null> {
    if (this.acquireError) throw this.acquireError;
    return this.inner.tryAcquire(request);
  }

  async acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    if (this.acquireError) throw this.acquireError;
    return this.inner.acquire(request, signal);
  }

  async extend(lock: HeldLock, ttl: number): Promise<number | null> {
    if (this.extendError) throw this.extendError;
    return this.inner.extend(lock, ttl);
  }

  release(lock: HeldLock): Promise<boolean> {
    return this.inner.release(lock);
  }

  isLocked(namespace: string, key: string): Promise<boolean> {
    return this.inner.isLocked(namespace, key);
  }

  inspect(namespace: string, key: string): Promise<BackendInspection> {
    return this.inner.inspect(namespace, key);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
