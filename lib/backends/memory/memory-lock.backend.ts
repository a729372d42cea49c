import type { AcquireRequest, HeldLock, LockBackend, LockGrant } from '../lock-backend.interface';
import { LockBackendError } from '../../errors';
import { monotonicNow } from '../../utils/clock';

interface MemoryLock {
  token: string;
  expiresAt: number;
  timer: NodeJS.Timeout;
}

interface Waiter {
  request: AcquireRequest;
  resolve(grant: LockGrant): void;
  reject(error: unknown): void;
}

/**
 * In-process locks for development and unit tests: same contract as the real backends (ttl expiry,
 * owner tokens, fencing tokens, FIFO waiting), but only within one Node process.
 */
export class MemoryLockBackend implements LockBackend {
  readonly kind = 'memory';
  readonly address = 'in-process';

  private readonly locks = new Map<string, MemoryLock>();
  private readonly queues = new Map<string, Waiter[]>();
  /** One counter for all keys: strictly increasing per key, and no per-key state left behind after release. */
  private lastFencingToken = 0n;
  private closed = false;

  async tryAcquire(request: AcquireRequest): Promise<LockGrant | null> {
    this.assertOpen('tryAcquire');
    const id = lockId(request.namespace, request.key);
    // Waiters are served first: a free key with a queue is only ever a transient state.
    if (this.locks.has(id) || this.queues.get(id)?.length) return null;
    return this.grant(id, request);
  }

  acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    if (this.closed) return Promise.reject(this.closedError('acquire'));
    const id = lockId(request.namespace, request.key);
    if (signal.aborted) return Promise.reject(signal.reason);
    if (!this.locks.has(id) && !this.queues.get(id)?.length) return Promise.resolve(this.grant(id, request));
    return new Promise<LockGrant>((resolve, reject) => {
      const onAbort = () => {
        this.removeWaiter(id, waiter);
        reject(signal.reason);
      };
      const waiter: Waiter = {
        request,
        resolve: (grant) => {
          signal.removeEventListener('abort', onAbort);
          resolve(grant);
        },
        reject: (error) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const queue = this.queues.get(id) ?? [];
      queue.push(waiter);
      this.queues.set(id, queue);
    });
  }

  async extend(lock: HeldLock, ttl: number): Promise<number | null> {
    this.assertOpen('extend');
    const id = lockId(lock.namespace, lock.key);
    const current = this.locks.get(id);
    if (!current || current.token !== lock.token) return null;
    const validUntil = monotonicNow() + ttl;
    clearTimeout(current.timer);
    current.expiresAt = validUntil;
    current.timer = this.expiryTimer(id, current.token, ttl);
    return validUntil;
  }

  async release(lock: HeldLock): Promise<boolean> {
    if (this.closed) return false;
    const id = lockId(lock.namespace, lock.key);
    const current = this.locks.get(id);
    if (!current || current.token !== lock.token) return false;
    this.free(id);
    return true;
  }

  async isLocked(namespace: string, key: string): Promise<boolean> {
    this.assertOpen('isLocked');
    return this.locks.has(lockId(namespace, key));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const lock of this.locks.values()) clearTimeout(lock.timer);
    this.locks.clear();
    const error = new LockBackendError(this.kind, this.address, 'acquire', 'the backend was closed while waiting');
    for (const queue of this.queues.values()) for (const waiter of queue) waiter.reject(error);
    this.queues.clear();
  }

  private grant(id: string, request: AcquireRequest): LockGrant {
    const validUntil = monotonicNow() + request.ttl;
    this.lastFencingToken += 1n;
    this.locks.set(id, { token: request.token, expiresAt: validUntil, timer: this.expiryTimer(id, request.token, request.ttl) });
    return { fencingToken: this.lastFencingToken, validUntil };
  }

  private expiryTimer(id: string, token: string, ttl: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      if (this.locks.get(id)?.token === token) this.free(id);
    }, ttl);
    timer.unref();
    return timer;
  }

  /** Deletes the lock and hands it straight to the first waiter (FIFO). */
  private free(id: string): void {
    const current = this.locks.get(id);
    if (current) clearTimeout(current.timer);
    this.locks.delete(id);
    const queue = this.queues.get(id);
    const next = queue?.shift();
    if (queue && queue.length === 0) this.queues.delete(id);
    if (next) next.resolve(this.grant(id, next.request));
  }

  private removeWaiter(id: string, waiter: Waiter): void {
    const queue = this.queues.get(id);
    if (!queue) return;
    const index = queue.indexOf(waiter);
    if (index >= 0) queue.splice(index, 1);
    if (queue.length === 0) this.queues.delete(id);
  }

  private assertOpen(operation: string): void {
    if (this.closed) throw this.closedError(operation);
  }

  private closedError(operation: string): LockBackendError {
    return new LockBackendError(this.kind, this.address, operation, 'the backend was closed');
  }
}

function lockId(namespace: string, key: string): string {
  return `${namespace}\u0000${key}`;
}
