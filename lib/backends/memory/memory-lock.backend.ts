import type { AcquireRequest, BackendInspection, HeldLock, LockBackend, LockGrant } from '../lock-backend.interface';
import { LockBackendError } from '../../errors';
import { monotonicNow } from '../../utils/clock';

interface Holder {
  readonly request: AcquireRequest;
  readonly fencingToken: bigint;
  readonly since: number;
  expiresAt: number;
  timer: NodeJS.Timeout;
}

interface Waiter {
  readonly request: AcquireRequest;
  readonly since: number;
  resolve(grant: LockGrant): void;
  reject(error: unknown): void;
}

/** One lock name: who holds it (by owner token) and who waits, in arrival order. */
interface KeyState {
  readonly holders: Map<string, Holder>;
  readonly queue: Waiter[];
}

/**
 * In-process locks for development and unit tests: same contract as the real backends (ttl expiry,
 * owner tokens, fencing tokens, FIFO waiting, read/write locks, semaphores), but only within one process.
 */
export class MemoryLockBackend implements LockBackend {
  readonly kind = 'memory';
  readonly address = 'in-process';
  readonly supports = { readWrite: true, semaphore: true };

  private readonly keys = new Map<string, KeyState>();
  /** One counter for all keys: strictly increasing per key, and no per-key state left behind after release. */
  private lastFencingToken = 0n;
  private closed = false;

  async tryAcquire(request: AcquireRequest): Promise<LockGrant | null> {
    this.assertOpen('tryAcquire');
    const id = stateId(request);
    const state = this.keys.get(id);
    // Waiters are served first, in order: nobody overtakes the queue.
    if (state && (state.queue.length > 0 || !admits(state, request))) return null;
    return this.grant(id, request);
  }

  /** See LockBackend.grantIfFree: the same check as acquire's first step, without a promise. */
  grantIfFree(request: AcquireRequest): LockGrant | null {
    this.assertOpen('acquire');
    const id = stateId(request);
    const state = this.keys.get(id);
    if (state && (state.queue.length > 0 || !admits(state, request))) return null;
    return this.grant(id, request);
  }

  acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    if (this.closed) return Promise.reject(this.closedError('acquire'));
    if (signal.aborted) return Promise.reject(signal.reason);
    const id = stateId(request);
    const state = this.keys.get(id);
    if (!state || (state.queue.length === 0 && admits(state, request))) return Promise.resolve(this.grant(id, request));
    return new Promise<LockGrant>((resolve, reject) => {
      const onAbort = () => {
        this.removeWaiter(id, waiter);
        reject(signal.reason);
      };
      const waiter: Waiter = {
        request,
        since: Date.now(),
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
      state.queue.push(waiter);
    });
  }

  async extend(lock: HeldLock, ttl: number): Promise<number | null> {
    this.assertOpen('extend');
    const id = stateId(lock);
    const holder = this.keys.get(id)?.holders.get(lock.token);
    if (!holder) return null;
    clearTimeout(holder.timer);
    holder.timer = this.expiryTimer(id, lock.token, ttl);
    holder.expiresAt = Date.now() + ttl;
    return monotonicNow() + ttl;
  }

  async release(lock: HeldLock): Promise<boolean> {
    if (this.closed) return false;
    return this.remove(stateId(lock), lock.token);
  }

  async isLocked(namespace: string, key: string): Promise<boolean> {
    this.assertOpen('isLocked');
    return (this.keys.get(stateId({ namespace, key }))?.holders.size ?? 0) > 0;
  }

  async inspect(namespace: string, key: string): Promise<BackendInspection> {
    const describe = (request: AcquireRequest) => ({
      mode: request.mode ?? 'exclusive',
      ...(request.holder !== undefined && { holder: request.holder }),
      ...(request.permits !== undefined && { permits: request.permits }),
    });
    const lock = this.keys.get(stateId({ namespace, key }));
    const semaphore = this.keys.get(stateId({ namespace, key, permits: 1 }));
    const states = [lock, semaphore].filter((state): state is KeyState => state !== undefined);
    return {
      holders: states.flatMap((state) =>
        [...state.holders.values()].map((holder) => ({
          ...describe(holder.request),
          fencingToken: holder.fencingToken,
          since: holder.since,
          expiresAt: holder.expiresAt,
        })),
      ),
      waiters: states.flatMap((state) => state.queue.map((waiter) => ({ ...describe(waiter.request), since: waiter.since }))),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const error = new LockBackendError(this.kind, this.address, 'acquire', 'the backend was closed while waiting');
    for (const state of this.keys.values()) {
      for (const holder of state.holders.values()) clearTimeout(holder.timer);
      for (const waiter of state.queue) waiter.reject(error);
    }
    this.keys.clear();
  }

  private grant(id: string, request: AcquireRequest): LockGrant {
    let state = this.keys.get(id);
    if (!state) {
      state = { holders: new Map(), queue: [] };
      this.keys.set(id, state);
    }
    this.lastFencingToken += 1n;
    state.holders.set(request.token, {
      request,
      fencingToken: this.lastFencingToken,
      since: Date.now(),
      expiresAt: Date.now() + request.ttl,
      timer: this.expiryTimer(id, request.token, request.ttl),
    });
    return { fencingToken: this.lastFencingToken, validUntil: monotonicNow() + request.ttl };
  }

  private expiryTimer(id: string, token: string, ttl: number): NodeJS.Timeout {
    const validUntil = monotonicNow() + ttl;
    const expire = (): NodeJS.Timeout => {
      // Timers may fire a little early on the monotonic clock; never free a lock before its validity ends.
      const left = validUntil - monotonicNow();
      const timer = left > 0 ? setTimeout(() => this.rearm(id, token, expire), Math.ceil(left)) : undefined;
      timer?.unref();
      return timer!;
    };
    const timer = setTimeout(() => this.rearm(id, token, expire), ttl);
    timer.unref();
    return timer;
  }

  /** Frees the lock when its validity has ended, or sets the holder's timer again for the rest of it. */
  private rearm(id: string, token: string, expire: () => NodeJS.Timeout | undefined): void {
    const holder = this.keys.get(id)?.holders.get(token);
    if (!holder) return;
    const again = expire();
    if (again) holder.timer = again;
    else this.remove(id, token);
  }

  /** Drops a holder and admits waiters from the head of the queue while they fit (several readers at once). */
  private remove(id: string, token: string): boolean {
    const state = this.keys.get(id);
    const holder = state?.holders.get(token);
    if (!state || !holder) return false;
    clearTimeout(holder.timer);
    state.holders.delete(token);
    while (state.queue.length > 0 && admits(state, state.queue[0].request)) {
      const next = state.queue.shift()!;
      next.resolve(this.grant(id, next.request));
    }
    if (state.holders.size === 0 && state.queue.length === 0) this.keys.delete(id);
    return true;
  }

  private removeWaiter(id: string, waiter: Waiter): void {
    const state = this.keys.get(id);
    if (!state) return;
    const index = state.queue.indexOf(waiter);
    if (index >= 0) state.queue.splice(index, 1);
    // A waiter leaving may unblock those behind it (e.g. readers queued behind an aborted writer).
    while (state.queue.length > 0 && admits(state, state.queue[0].request)) {
      const next = state.queue.shift()!;
      next.resolve(this.grant(id, next.request));
    }
    if (state.holders.size === 0 && state.queue.length === 0) this.keys.delete(id);
  }

  private assertOpen(operation: string): void {
    if (this.closed) throw this.closedError(operation);
  }

  private closedError(operation: string): LockBackendError {
    return new LockBackendError(this.kind, this.address, operation, 'the backend was closed');
  }
}

/** Whether the current holders leave room for this request (the queue order is checked by the caller). */
function admits(state: KeyState, request: AcquireRequest): boolean {
  if (request.permits !== undefined) return state.holders.size < request.permits;
  if (request.mode === 'read') return [...state.holders.values()].every((holder) => holder.request.mode === 'read');
  return state.holders.size === 0;
}

/** Semaphores live apart from locks of the same name. */
function stateId(request: Pick<AcquireRequest, 'namespace' | 'key' | 'permits'>): string {
  return `${request.namespace}\u0000${request.permits === undefined ? 'lock' : 'semaphore'}\u0000${request.key}`;
}
