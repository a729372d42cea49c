import type { AcquireRequest, HeldLock, LockBackend, LockGrant } from '../../lib/backends/lock-backend.interface';

/**
 * Wraps a real backend and remembers what it granted, so a test can act on a lock "from outside" the handle
 * holding it (e.g. release it behind the holder's back), and counts calls, so a test can prove that
 * invalid input never reached the server. It adds no behaviour of its own.
 */
export class RecordingBackend implements LockBackend {
  readonly calls: Record<'tryAcquire' | 'acquire' | 'extend' | 'release' | 'isLocked' | 'close', number> = {
    tryAcquire: 0,
    acquire: 0,
    extend: 0,
    release: 0,
    isLocked: 0,
    close: 0,
  };
  private readonly grants = new Map<string, HeldLock>();

  constructor(readonly inner: LockBackend) {}

  get kind(): string {
    return this.inner.kind;
  }

  get address(): string {
    return this.inner.address;
  }

  get supports(): LockBackend['supports'] {
    return this.inner.supports;
  }

  /** Calls that would have reached the server (close excluded). */
  get serverCalls(): number {
    const { close: _close, ...rest } = this.calls;
    return Object.values(rest).reduce((sum, count) => sum + count, 0);
  }

  /** The lock as granted to the owner `token`, exactly as the core will later pass it to extend/release. */
  granted(token: string): HeldLock {
    const lock = this.grants.get(token);
    if (!lock) throw new Error(`no grant recorded for token ${token}`);
    return lock;
  }

  async tryAcquire(request: AcquireRequest): Promise<LockGrant | null> {
    this.calls.tryAcquire++;
    return this.remember(request, await this.inner.tryAcquire(request));
  }

  async acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    this.calls.acquire++;
    return this.remember(request, await this.inner.acquire(request, signal))!;
  }

  extend(lock: HeldLock, ttl: number): Promise<number | null> {
    this.calls.extend++;
    return this.inner.extend(lock, ttl);
  }

  release(lock: HeldLock): Promise<boolean> {
    this.calls.release++;
    return this.inner.release(lock);
  }

  isLocked(namespace: string, key: string): Promise<boolean> {
    this.calls.isLocked++;
    return this.inner.isLocked(namespace, key);
  }

  close(): Promise<void> {
    this.calls.close++;
    return this.inner.close();
  }

  private remember(request: AcquireRequest, grant: LockGrant | null): LockGrant | null {
    if (grant) this.grants.set(request.token, { ...request, fencingToken: grant.fencingToken, state: grant.state });
    return grant;
  }
}
