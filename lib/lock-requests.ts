import type { AcquireRequest, LockBackend } from './backends/lock-backend.interface';
import { LockNotSupportedError, LockServiceClosedError } from './errors';
import type { LockOptions, ResolvedLockOptions } from './lock-options';
import { newOwnerToken } from './utils/owner-token';
import { resolveLockOptions, validateLockKey } from './utils/validate';

/**
 * Turns a key and per-call options into what a backend is asked: the key checked and NFC-normalised, options
 * merged over the service's defaults and checked, kinds and features the backend cannot offer refused before any
 * server call, and a fresh owner token. LockService makes one per service.
 */
export class LockRequests {
  private readonly resolved = new WeakMap<LockOptions, ResolvedLockOptions>();

  constructor(
    private readonly backend: LockBackend,
    private readonly namespace: string,
    private readonly holder: string,
    private readonly defaults: LockOptions | undefined,
  ) {}

  /** `closing`: the service is shutting down, so no new lock may be granted. */
  prepare(
    key: string,
    options: LockOptions | undefined,
    closing: boolean,
  ): { request: AcquireRequest; resolved: ResolvedLockOptions } {
    const normalized = validateLockKey(key);
    const resolved = this.resolveOptions(options, normalized);
    if (closing) {
      throw new LockServiceClosedError(normalized);
    }
    this.checkSupport(resolved);
    const request: AcquireRequest = {
      namespace: this.namespace,
      key: normalized,
      token: newOwnerToken(),
      ttl: resolved.ttl,
      mode: resolved.mode,
      holder: this.holder,
      permits: resolved.permits,
      lockDelay: resolved.lockDelay,
    };
    return { request, resolved };
  }

  /**
   * Options that cannot change (frozen, as @WithLock's are) and name their family (else it depends on the
   * key) resolve to the same result every time, so they are resolved once.
   */
  private resolveOptions(options: LockOptions | undefined, key: string): ResolvedLockOptions {
    if (options === undefined || options.family === undefined || !Object.isFrozen(options)) {
      return resolveLockOptions(options, this.defaults, key);
    }
    let resolved = this.resolved.get(options);
    if (!resolved) {
      resolved = resolveLockOptions(options, this.defaults, key);
      this.resolved.set(options, resolved);
    }
    return resolved;
  }

  private checkSupport(resolved: ResolvedLockOptions): void {
    const supports = this.backend.supports ?? {};
    if (resolved.mode !== 'exclusive' && !supports.readWrite) {
      throw new LockNotSupportedError(
        this.backend.kind,
        `mode '${resolved.mode}'`,
        'it has no read/write lock implementation.',
      );
    }
    if (resolved.permits !== undefined && !supports.semaphore) {
      throw new LockNotSupportedError(this.backend.kind, 'permits (semaphores)', 'it has no semaphore implementation.');
    }
    if (resolved.lockDelay > 0 && !supports.lockDelay) {
      throw new LockNotSupportedError(
        this.backend.kind,
        'lockDelay',
        'its locks end with their session, which leaves nothing that could keep the key blocked afterwards. ' +
          'Use the memory, Redis, Redlock or etcd backend for a lock-delay, or check fencing tokens in the resource instead.',
      );
    }
  }
}
