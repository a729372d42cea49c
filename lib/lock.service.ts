import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Observable } from 'rxjs';
import { BackendCalls, WaitHook } from './backend-calls';
import type { AcquireRequest, BackendInspection, LockBackend } from './backends/lock-backend.interface';
import { runInLockScope } from './context/lock-context';
import { currentInScope, inheritedInScope } from './context/scope-lookup';
import { LOGGER_CONTEXT } from './distributed-lock.constants';
import { LockNotSupportedError } from './errors';
import type { LockEvent } from './lock-event';
import { LockEventHub } from './lock-event-hub';
import { LockGrants } from './lock-grants';
import { type LockHandle, reentrantHandle } from './lock-handle';
import { AcquireTracing, LockInstrumentation } from './lock-instrumentation';
import { LockRequests } from './lock-requests';
import {
  DEFAULT_KEY_PREFIX,
  DEFAULT_OPERATION_TIMEOUT,
  LockMode,
  LockOptions,
  LockServiceOptions,
  ResolvedLockOptions,
} from './lock-options';
import { monotonicNow } from './utils/clock';
import { jsonSafe } from './utils/json';
import { describeError } from './utils/redact';
import {
  checkOptionNames,
  optionNames,
  resolveLockOptions,
  validateKeyPrefix,
  validateLockKey,
} from './utils/validate';

const SERVICE_OPTIONS = optionNames<LockServiceOptions>({
  keyPrefix: true,
  defaults: true,
  operationTimeout: true,
  instanceId: true,
});

/** Where close() reports locks it could not release. */
const shutdownLogger = new Logger(LOGGER_CONTEXT);
/** What `LockService.inspect(key)` returns. */
export interface LockInspection extends BackendInspection {
  readonly key: string;
  readonly namespace: string;
  readonly backend: string;
  readonly address: string;
}

/**
 * Acquires, renews and releases locks on one backend. Usable on its own, or injected by DistributedLockModule.
 * Every key is namespaced under `keyPrefix`; every call has a deadline; every handle it hands out is released on `close()`.
 */
export class LockService {
  readonly keyPrefix: string;
  /** `<hostname>/<pid>/<instanceId>`: who holds or waits, in events, logs and the inspector. */
  readonly holderId: string;
  /**
   * Every lock's life as typed events: acquired, renewed, at-risk, lost, released, timeout.
   * Hot: subscribers see what happens after they subscribe.
   */
  readonly events$: Observable<LockEvent>;
  private readonly eventHub: LockEventHub;
  private readonly tracing: AcquireTracing;
  private readonly defaults: LockOptions | undefined;
  private readonly requests: LockRequests;
  private readonly calls: BackendCalls;
  private readonly grants: LockGrants;
  private closing: Promise<void> | undefined;

  constructor(
    readonly backend: LockBackend,
    options: LockServiceOptions = {},
  ) {
    if (!backend || typeof backend.acquire !== 'function') {
      throw new TypeError(
        'LockService needs a backend: pass new MemoryLockBackend(), new RedisLockBackend({ client }) or new EtcdLockBackend({ client }).',
      );
    }
    checkOptionNames(options, SERVICE_OPTIONS, 'LockService options', "{ keyPrefix: 'locks' }");
    this.keyPrefix = validateKeyPrefix(options.keyPrefix ?? DEFAULT_KEY_PREFIX);
    // Validate the defaults now, so a bad configuration fails at startup rather than on the first request.
    resolveLockOptions(undefined, options.defaults);
    // A frozen copy: options resolved against it can be kept (see resolveOptions).
    this.defaults = options.defaults && Object.freeze({ ...options.defaults });
    this.holderId = `${hostname()}/${process.pid}/${options.instanceId ?? randomBytes(4).toString('hex')}`;
    this.eventHub = new LockEventHub(backend.kind, this.holderId);
    this.tracing = new AcquireTracing(backend.kind, this.holderId);
    this.events$ = this.eventHub.events$;
    const operationTimeout = options.operationTimeout ?? DEFAULT_OPERATION_TIMEOUT;
    if (!(operationTimeout > 0) || !Number.isFinite(operationTimeout)) {
      throw new TypeError(
        `Invalid operationTimeout ${String(options.operationTimeout)}: use a finite number of milliseconds > 0.`,
      );
    }
    this.calls = new BackendCalls(backend, operationTimeout);
    this.grants = new LockGrants(backend, this.calls, this.eventHub, operationTimeout);
    this.requests = new LockRequests(backend, this.keyPrefix, this.holderId, this.defaults);
  }

  /** Number of locks this service holds right now. */
  get heldCount(): number {
    return this.grants.size;
  }

  /** The locks this service holds right now (a snapshot). */
  held(): LockHandle[] {
    return this.grants.held();
  }

  /**
   * Waits up to `waitTimeout` for the key, woken by the server when the holder releases.
   * Throws LockTimeoutError when it stays busy, LockBackendError when the server cannot be reached.
   * Reentrant: in a call chain that holds the key (`run`, `@WithLock`, a locked method), it returns at once a
   * handle of that lock whose release() leaves it to the outermost holder.
   */
  async acquire(key: string, options?: LockOptions): Promise<LockHandle> {
    const { request, resolved } = this.prepare(key, options);
    const inherited = this.inheritedLock(request.key, resolved);
    if (inherited) return reentrantHandle(inherited);
    return this.tracing.trace('acquire', request, resolved, () => this.grants.acquire(request, resolved));
  }

  /**
   * @internal acquire() for LockSet: `onWait` learns of each wait for a busy key, with a function that cancels
   * it (a client that disconnects), because an AbortController per uncontended request is a measurable cost on
   * Node 20. Validation errors throw synchronously.
   */
  acquireCancellable(key: string, options: LockOptions | undefined, onWait?: WaitHook): Promise<LockHandle> {
    const { request, resolved } = this.prepare(key, options);
    // Every @WithLock request comes through here: no closure for trace() when nothing traces.
    if (!this.tracing.active) return this.grants.acquire(request, resolved, onWait);
    return this.tracing.trace('acquire', request, resolved, () => this.grants.acquire(request, resolved, onWait));
  }

  /** One attempt; resolves null at once when the key is busy. Reentrant like acquire(). */
  async tryAcquire(key: string, options?: LockOptions): Promise<LockHandle | null> {
    const { request, resolved } = this.prepare(key, options);
    const inherited = this.inheritedLock(request.key, resolved);
    if (inherited) return reentrantHandle(inherited);
    return this.tracing.trace('tryAcquire', request, resolved, () =>
      this.grants.tryAcquire(request, resolved, monotonicNow()),
    );
  }

  /**
   * Adds instrumentation (tracing spans around acquisitions). Several can be added; each wraps the next.
   * Metrics and logs need no hook: they subscribe to `events$`.
   */
  instrument(instrumentation: LockInstrumentation): () => void {
    return this.tracing.add(instrumentation);
  }

  /**
   * Acquires, runs `fn` with the handle, and releases in `finally`. Rethrows exactly what `fn` threw.
   * If the lock was lost while `fn` ran, rejects with the LockLostError (the work ran without the guarantee).
   * Reentrant: a nested `run` on a key this call chain already holds reuses that lock.
   */
  async run<T>(key: string, fn: (lock: LockHandle) => Promise<T> | T, options?: LockOptions): Promise<T> {
    const normalized = validateLockKey(key);
    const resolved = resolveLockOptions(options, this.defaults);
    const inherited = this.inheritedLock(normalized, resolved);
    if (inherited) return fn(inherited);
    const lock = await this.acquire(normalized, options);
    return runInLockScope(async (scope) => {
      scope.hold(lock);
      let result: T;
      try {
        result = await fn(lock);
      } catch (error) {
        await lock.release().catch(() => undefined);
        scope.end();
        throw error;
      }
      // A handle's signal aborts only with its LockLostError.
      const lost = lock.signal.aborted ? (lock.signal.reason as Error) : undefined;
      // The work succeeded; a failed release only means the lock expires after its ttl instead of now.
      await lock.release().catch(() => undefined);
      scope.end();
      if (lost) throw lost;
      return result;
    });
  }

  /**
   * Who holds the key (holder id, since when, fencing token, expiry) and who waits, in order, where the
   * backend can tell. For operators: the admin controller and the CLI print this.
   */
  async inspect(key: string): Promise<LockInspection> {
    const normalized = validateLockKey(key);
    if (!this.backend.inspect) {
      throw new LockNotSupportedError(this.backend.kind, 'inspect()', 'it cannot list holders and waiters.');
    }
    const found = await this.calls.call('inspect', this.backend.inspect(this.keyPrefix, normalized));
    return jsonSafe({
      key: normalized,
      namespace: this.keyPrefix,
      backend: this.backend.kind,
      address: this.backend.address,
      ...found,
    });
  }

  /** Whether anyone holds the key now. */
  async isLocked(key: string): Promise<boolean> {
    const normalized = validateLockKey(key);
    return this.calls.call('isLocked', this.backend.isLocked(this.keyPrefix, normalized));
  }

  /**
   * The handle the current call chain holds (inside `run`, `@WithLock` handlers and locked service methods),
   * for `key` or, without a key, the innermost one. Undefined outside a locked scope.
   */
  current(key?: string): LockHandle | undefined {
    return currentInScope(this.keyPrefix, key);
  }

  /**
   * @internal The lock this call chain already holds that covers the request, so a nested acquisition reuses it
   * instead of waiting for itself. A write/exclusive lock covers reads; a read lock cannot be upgraded
   * in place (two readers upgrading would deadlock), so that is refused with a clear error.
   */
  inheritedLock(
    key: string,
    resolved: { readonly mode?: LockMode; readonly permits?: number },
  ): LockHandle | undefined {
    return inheritedInScope(this.keyPrefix, this.backend.kind, key, resolved);
  }

  /**
   * Releases every lock this service holds, then closes what the backend created itself (not your client). A lock
   * it cannot release (the server or your client is gone already) is logged as a warning: it stays locked until
   * its ttl expires.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const { key, error } of await this.grants.releaseAll()) {
        shutdownLogger.warn(
          `Could not release lock "${key}" on close; it stays locked until its ttl expires. ${describeError(error)}`,
        );
      }
      await this.backend.close();
      this.eventHub.complete();
    })();
    return this.closing;
  }

  /** Nest calls this on shutdown when LockService is a provider. */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  private prepare(
    key: string,
    options: LockOptions | undefined,
  ): { request: AcquireRequest; resolved: ResolvedLockOptions } {
    return this.requests.prepare(key, options, this.closing !== undefined);
  }

  /**
   * @internal Like subscribing to events$, for a listener that uses only some event types: the others are
   * then not even built for it. The module's logger uses it, so that a grant costs no debug line nobody sees.
   */
  listenToEvents(types: Iterable<LockEvent['type']>, listener: (event: LockEvent) => void): () => void {
    return this.eventHub.listen(types, listener);
  }
}
