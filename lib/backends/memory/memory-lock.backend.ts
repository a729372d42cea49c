import type {
  AcquireRequest,
  BackendInspection,
  BackendLockEvent,
  HeldLock,
  LockBackend,
  LockGrant,
} from '../lock-backend.interface';
import type { ElectionBackend } from '../../leader-election/election-backend.interface';
import { MemoryElection } from '../../leader-election/memory/memory-election';
import { LockBackendError } from '../../errors';
import { monotonicNow } from '../../utils/clock';
import { Holders } from './holders';
import { BackendLifecycle } from '../shared/backend-lifecycle';

interface Holder {
  readonly request: AcquireRequest;
  readonly fencingToken: bigint;
  readonly since: number;
  /** Epoch ms, for inspect(). */
  expiresAt: number;
  /** Monotonic ms: the lock is no longer the holder's from then on (extend finds nothing). */
  validUntil: number;
  /**
   * Monotonic ms: the key is free from then on, whether or not anyone has removed the holder yet. validUntil
   * plus the request's lock-delay: a holder that was lost without a release keeps the key blocked that long.
   */
  blocksUntil: number;
  /** The core's listener (observe()): told the lock is lost when it expires here, before a waiter gets the key. */
  onLost?: (event: BackendLockEvent) => void;
}

interface Waiter {
  readonly request: AcquireRequest;
  readonly since: number;
  resolve(grant: LockGrant): void;
  reject(error: unknown): void;
}

/** One lock name: who holds it (by owner token) and who waits, in arrival order. */
interface KeyState {
  readonly holders: Holders<Holder>;
  readonly queue: Waiter[];
  /**
   * Expired holders are dropped when the key is next touched. This timer, armed only while someone waits, wakes
   * the queue when the first holder expires: an uncontended grant then sets no timer at all.
   */
  expiryTimer?: NodeJS.Timeout;
}

/**
 * In-process locks for development and unit tests: same contract as the real backends (ttl expiry,
 * owner tokens, fencing tokens, FIFO waiting, read/write locks, semaphores), but only within one process.
 */
export class MemoryLockBackend implements LockBackend {
  readonly kind = 'memory';
  readonly address = 'in-process';
  readonly supports = { readWrite: true, semaphore: true, expiry: true, lockDelay: true };

  private readonly keys = new Map<string, KeyState>();
  /** One counter for all keys: strictly increasing per key, and no per-key state left behind after release. */
  private lastFencingToken = 0n;
  /** Waiters here are in-process promises, so close() rejects them itself; no clean-ups run on after it. */
  private readonly lifecycle = new BackendLifecycle(this.kind, this.address);

  /** @internal LeaderElection in this process; every view of this backend sees the same elections. */
  createElectionBackend(): ElectionBackend {
    return new MemoryElection(this);
  }

  async tryAcquire(request: AcquireRequest): Promise<LockGrant | null> {
    this.lifecycle.assertOpen('tryAcquire');
    const id = stateId(request);
    const state = this.current(id);
    // Waiters are served first, in order: nobody overtakes the queue.
    if (state && (state.queue.length > 0 || !admits(state, request))) return null;
    return this.grant(id, request);
  }

  acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    if (this.lifecycle.isClosed) return Promise.reject(this.lifecycle.closedError('acquire'));
    if (signal.aborted) return Promise.reject(signal.reason);
    const id = stateId(request);
    const state = this.current(id);
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
      this.armExpiry(id, state);
    });
  }

  async extend(lock: HeldLock, ttl: number): Promise<number | null> {
    this.lifecycle.assertOpen('extend');
    const id = heldStateId(lock);
    const holder = this.current(id)?.holders.get(lock.token);
    const now = monotonicNow();
    // Past its validity the lock is lost, even while its lock-delay still keeps others out.
    if (!holder || holder.validUntil <= now) return null;
    holder.expiresAt = Date.now() + ttl;
    holder.validUntil = now + ttl;
    holder.blocksUntil = holder.validUntil + (lock.lockDelay ?? 0);
    // An armed expiry timer now fires early, finds nothing expired and arms itself again.
    return holder.validUntil;
  }

  async release(lock: HeldLock): Promise<boolean> {
    if (this.lifecycle.isClosed) return false;
    return this.remove(heldStateId(lock), lock.token);
  }

  /**
   * The holder's handle hears of an expiry here before the key goes to a waiter: the core's own check of the
   * validity runs on the watchdog's timer, which can fire after this backend's (real servers expire a lock a
   * drift allowance after its validity ends, so they need no such notice).
   */
  observe(lock: HeldLock, listener: (event: BackendLockEvent) => void): () => void {
    const holder = this.keys.get(heldStateId(lock))?.holders.get(lock.token);
    if (!holder) return () => undefined;
    holder.onLost = listener;
    return () => {
      if (holder.onLost === listener) holder.onLost = undefined;
    };
  }

  async isLocked(namespace: string, key: string): Promise<boolean> {
    this.lifecycle.assertOpen('isLocked');
    return (this.current(stateId({ namespace, key }))?.holders.size ?? 0) > 0;
  }

  async inspect(namespace: string, key: string): Promise<BackendInspection> {
    const describe = (request: AcquireRequest) => ({
      mode: request.mode ?? 'exclusive',
      ...(request.holder !== undefined && { holder: request.holder }),
      ...(request.permits !== undefined && { permits: request.permits }),
    });
    const lock = this.current(stateId({ namespace, key }));
    const semaphore = this.current(stateId({ namespace, key, permits: 1 }));
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
      waiters: states.flatMap((state) =>
        state.queue.map((waiter) => ({ ...describe(waiter.request), since: waiter.since })),
      ),
    };
  }

  close(): Promise<void> {
    return this.lifecycle.close(async () => this.rejectWaiters());
  }

  private rejectWaiters(): void {
    const error = new LockBackendError(this.kind, this.address, 'acquire', 'the backend was closed while waiting');
    for (const state of this.keys.values()) {
      clearTimeout(state.expiryTimer);
      for (const waiter of state.queue) waiter.reject(error);
    }
    this.keys.clear();
  }

  private grant(id: string, request: AcquireRequest): LockGrant {
    let state = this.keys.get(id);
    if (!state) {
      state = { holders: new Holders(), queue: [] };
      this.keys.set(id, state);
    }
    this.lastFencingToken += 1n;
    const validUntil = monotonicNow() + request.ttl;
    const since = Date.now();
    state.holders.set(request.token, {
      request,
      fencingToken: this.lastFencingToken,
      since,
      expiresAt: since + request.ttl,
      validUntil,
      blocksUntil: validUntil + (request.lockDelay ?? 0),
    });
    // The state id rides along in the handle, so extend and release need not build it again.
    return { fencingToken: this.lastFencingToken, validUntil, state: id };
  }

  /** The key's state with expired holders (lock-delay included) dropped (and the waiters they blocked admitted), or undefined. */
  private current(id: string): KeyState | undefined {
    const state = this.keys.get(id);
    if (!state) return undefined;
    const now = monotonicNow();
    let expired = false;
    for (const [token, holder] of state.holders.entries()) {
      if (holder.blocksUntil <= now) {
        state.holders.delete(token);
        expired = true;
        holder.onLost?.({ type: 'lost', reason: 'its ttl ran out before it was renewed' });
      }
    }
    if (expired) this.admitWaiters(id, state);
    return this.keys.get(id);
  }

  /** Wakes the queue when the first holder's validity ends, if nobody releases before. */
  private armExpiry(id: string, state: KeyState): void {
    if (state.expiryTimer || state.holders.size === 0) return;
    let first = Infinity;
    for (const holder of state.holders.values()) first = Math.min(first, holder.blocksUntil);
    // Timers may fire a little early on the monotonic clock; current() never frees a lock before its validity ends.
    state.expiryTimer = setTimeout(
      () => {
        state.expiryTimer = undefined;
        if (this.keys.get(id) !== state) return;
        this.current(id);
        if (state.queue.length > 0) this.armExpiry(id, state);
      },
      Math.max(1, Math.ceil(first - monotonicNow())),
    );
    state.expiryTimer.unref();
  }

  /** Drops a holder and admits waiters from the head of the queue while they fit (several readers at once). */
  private remove(id: string, token: string): boolean {
    const state = this.keys.get(id);
    if (!state?.holders.delete(token)) return false;
    this.admitWaiters(id, state);
    return true;
  }

  /** Admits waiters from the head of the queue while they fit; forgets the key when nobody holds or waits. */
  private admitWaiters(id: string, state: KeyState): void {
    while (state.queue.length > 0 && admits(state, state.queue[0].request)) {
      const next = state.queue.shift()!;
      next.resolve(this.grant(id, next.request));
    }
    if (state.holders.size === 0 && state.queue.length === 0) {
      clearTimeout(state.expiryTimer);
      this.keys.delete(id);
    } else if (state.queue.length === 0 && state.expiryTimer) {
      clearTimeout(state.expiryTimer);
      state.expiryTimer = undefined;
    }
  }

  private removeWaiter(id: string, waiter: Waiter): void {
    const state = this.keys.get(id);
    if (!state) return;
    const index = state.queue.indexOf(waiter);
    if (index >= 0) state.queue.splice(index, 1);
    // A waiter leaving may unblock those behind it (e.g. readers queued behind an aborted writer).
    this.admitWaiters(id, state);
  }
}

/** Whether the current holders leave room for this request (the queue order is checked by the caller). */
function admits(state: KeyState, request: AcquireRequest): boolean {
  if (request.permits !== undefined) return state.holders.size < request.permits;
  if (request.mode === 'read') return [...state.holders.values()].every((holder) => holder.request.mode === 'read');
  return state.holders.size === 0;
}

function heldStateId(lock: HeldLock): string {
  return typeof lock.state === 'string' ? lock.state : stateId(lock);
}

/** Semaphores live apart from locks of the same name. */
function stateId(request: Pick<AcquireRequest, 'namespace' | 'key' | 'permits'>): string {
  return `${request.namespace}\u0000${request.permits === undefined ? 'lock' : 'semaphore'}\u0000${request.key}`;
}
