import { BackendCalls, WaitHook } from './backend-calls';
import type { AcquireRequest, HeldLock, LockBackend, LockGrant } from './backends/lock-backend.interface';
import { currentLockScope } from './context/lock-context';
import { LockBackendError, LockServiceClosedError, LockTimeoutError } from './errors';
import { EventOrigin, LockEventHub } from './lock-event-hub';
import { LockHandle } from './lock-handle';
import { FOLLOW_LIFECYCLE } from './lock-notices';
import type { ResolvedLockOptions } from './lock-options';
import { monotonicNow } from './utils/clock';
import { SlotList } from './utils/slot-list';

/**
 * @internal From a prepared request (see LockRequests) to a held LockHandle, for LockService: one attempt or a
 * wait with whatever time is left, the 'timeout' and 'acquired' events, and the list of handles held now, which
 * `releaseAll()` ends on close. Chained rather than async: each await would be another promise on every request.
 */
export class LockGrants {
  private readonly handles = new SlotList<LockHandle>();
  /** Set by releaseAll(): a grant that arrives later is released at once. */
  private closing = false;

  constructor(
    private readonly backend: LockBackend,
    private readonly calls: BackendCalls,
    private readonly eventHub: LockEventHub,
    private readonly operationTimeout: number,
  ) {
    // Locks granted while nobody listened report their renewals, loss and release to a listener that comes later.
    eventHub.onFirstListener = () => {
      for (const handle of this.handles.toArray()) handle[FOLLOW_LIFECYCLE](eventHub.lifecycle);
    };
  }

  get size(): number {
    return this.handles.size;
  }

  held(): LockHandle[] {
    return this.handles.toArray();
  }

  /** See LockService.acquire(): waits up to `resolved.waitTimeout`. */
  acquire(request: AcquireRequest, resolved: ResolvedLockOptions, onWait?: WaitHook): Promise<LockHandle> {
    const started = monotonicNow();
    // Cancelled before it began: no attempt, whatever the path (a grant would be taken for nobody).
    if (resolved.signal?.aborted) return Promise.reject(resolved.signal.reason);
    if (resolved.waitTimeout === 0) {
      return this.attempt(
        'acquire',
        request,
        resolved,
        started,
        () => this.timedOut(request, resolved, started, 0),
        0,
        resolved.signal,
      );
    }
    if (this.backend.tryBeforeWait) {
      // The uncontended fast path: one round trip, no wait machinery; a server that does not answer fails it by
      // the waitTimeout, as it would fail the wait.
      return this.attempt(
        'acquire',
        request,
        resolved,
        started,
        () => this.wait(request, resolved, started, onWait),
        resolved.waitTimeout,
        resolved.signal,
      );
    }
    return this.wait(request, resolved, started, onWait);
  }

  /** One attempt; resolves null at once when the key is busy. */
  tryAcquire(request: AcquireRequest, resolved: ResolvedLockOptions, started: number): Promise<LockHandle | null> {
    return this.attempt('tryAcquire', request, resolved, started, () => null);
  }

  /**
   * One attempt, then `otherwise()` when the key is busy or the grant arrived with no validity left. One reaction
   * on the backend's answer: this is the path of every uncontended acquire on Redis. `waitTimeout`: see
   * BackendCalls.tryGrant.
   */
  private attempt<T>(
    operation: 'acquire' | 'tryAcquire',
    request: AcquireRequest,
    resolved: ResolvedLockOptions,
    started: number,
    otherwise: () => T | Promise<T>,
    waitTimeout?: number,
    signal?: AbortSignal,
  ): Promise<LockHandle | T> {
    return this.calls
      .tryGrant(request, operation, waitTimeout, signal)
      .then((grant) => (grant ? this.adopt(request, grant, resolved, started) : null) ?? otherwise());
  }

  /**
   * Releases every handle held now; no grant is adopted from then on. Resolves with the locks whose release
   * failed (left to expire after their ttl), each with its error.
   */
  async releaseAll(): Promise<{ readonly key: string; readonly error: unknown }[]> {
    this.closing = true;
    const handles = this.handles.toArray();
    const results = await Promise.allSettled(handles.map((handle) => handle.release()));
    return results.flatMap((result, index) =>
      result.status === 'rejected' ? [{ key: handles[index].key, error: result.reason as unknown }] : [],
    );
  }

  /** Waits for a grant with whatever time is left; again if one arrives with no validity left. */
  private wait(
    request: AcquireRequest,
    resolved: ResolvedLockOptions,
    started: number,
    onWait?: WaitHook,
  ): Promise<LockHandle> {
    const remaining = resolved.waitTimeout - (monotonicNow() - started);
    if (remaining <= 0) return this.timedOut(request, resolved, started, resolved.waitTimeout);
    const signal = resolved.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return this.calls.waitForGrant(request, remaining, resolved.waitTimeout, signal, onWait).then(
      // The grant arrived with no validity left (a very slow reply): it was released; wait again if time remains.
      (grant) => this.adopt(request, grant, resolved, started) ?? this.wait(request, resolved, started, onWait),
      (error: unknown) => {
        if (error instanceof LockTimeoutError) this.emitTimeout(request, resolved, started);
        // The service's close() ended the wait (closing the backend aborts its waiters): a shutdown, not a server
        // that could not be reached.
        if (this.closing && error instanceof LockBackendError) throw new LockServiceClosedError(request.key);
        throw error;
      },
    );
  }

  private timedOut(
    request: AcquireRequest,
    resolved: ResolvedLockOptions,
    started: number,
    waitTimeout: number,
  ): Promise<never> {
    this.emitTimeout(request, resolved, started);
    return Promise.reject(new LockTimeoutError(request.key, waitTimeout));
  }

  private emitTimeout(request: AcquireRequest, resolved: ResolvedLockOptions, started: number): void {
    const base = this.eventHub.base({ request, family: resolved.family, scope: currentLockScope() });
    this.eventHub.emit({ type: 'timeout', ...base, waitTime: Math.round(monotonicNow() - started) });
  }

  private readonly forget = (ended: LockHandle): void => {
    this.handles.delete(ended);
  };

  /** Wraps a grant in a handle, or releases it when it arrived with no validity left. */
  private adopt(
    request: AcquireRequest,
    grant: LockGrant,
    resolved: ResolvedLockOptions,
    started: number,
  ): LockHandle | null {
    // Spelled out rather than spread: this runs on every grant, and a fixed shape keeps it cheap.
    const lock: HeldLock = {
      namespace: request.namespace,
      key: request.key,
      token: request.token,
      ttl: request.ttl,
      mode: request.mode,
      holder: request.holder,
      permits: request.permits,
      lockDelay: request.lockDelay,
      fencingToken: grant.fencingToken,
      state: grant.state,
    };
    if (grant.validUntil <= monotonicNow() || this.closing) {
      void this.backend.release(lock).catch(() => undefined);
      return null;
    }
    // Kept with the handle even while nobody listens, for a listener that comes while it is held.
    const origin: EventOrigin = { request, family: resolved.family, scope: currentLockScope() };
    const tracked = this.eventHub.tracksHandles();
    const handle = new LockHandle({
      backend: this.backend,
      lock,
      validUntil: grant.validUntil,
      renewInterval: resolved.renewInterval,
      operationTimeout: this.operationTimeout,
      maxHold: resolved.maxHold,
      onEnd: this.forget,
      lifecycle: tracked ? this.eventHub.lifecycle : undefined,
      lifecycleContext: origin,
    });
    this.handles.add(handle);
    if (tracked && this.eventHub.wants('acquired')) {
      const waitTime = Math.round(monotonicNow() - started);
      this.eventHub.emit({
        type: 'acquired',
        ...this.eventHub.base(origin),
        waitTime,
        fencingToken: handle.fencingToken,
        expiresAt: handle.expiresAt,
      });
    }
    return handle;
  }
}
