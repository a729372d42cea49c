import type { AcquireRequest, HeldLock, LockBackend, LockGrant } from '../../lib/backends/lock-backend.interface';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';

/**
 * The memory backend with switchable faults, to drive the core (watchdog, deadlines) through failures.
 * It tests how LockService/LockHandle react, not how a server behaves: server behaviour is tested against real servers.
 */
export class FaultyBackend implements LockBackend {
  readonly kind = 'faulty-memory';
  readonly address = 'in-process';
  readonly inner = new MemoryLockBackend();
  calls = { tryAcquire: 0, acquire: 0, extend: 0, release: 0 };
  /** What the next extend calls do. */
  extendFault: 'none' | 'error' | 'hang' = 'none';
  acquireFault: 'none' | 'hang-ignoring-signal' = 'none';
  releaseFault: 'none' | 'error' = 'none';
  tryAcquireDelayMs = 0;
  /**
   * How long an extend's answer takes to come back after the renewal took effect: a slow server or network.
   * The validity it answers counts from before the delay, as a client counts it from the call.
   */
  extendDelayMs = 0;

  async tryAcquire(request: AcquireRequest): Promise<LockGrant | null> {
    this.calls.tryAcquire += 1;
    if (this.tryAcquireDelayMs) await new Promise((r) => setTimeout(r, this.tryAcquireDelayMs));
    return this.inner.tryAcquire(request);
  }

  acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    this.calls.acquire += 1;
    if (this.acquireFault === 'hang-ignoring-signal') return new Promise(() => undefined);
    return this.inner.acquire(request, signal);
  }

  async extend(lock: HeldLock, ttl: number): Promise<number | null> {
    this.calls.extend += 1;
    if (this.extendFault === 'error') throw new Error('ECONNRESET (injected)');
    if (this.extendFault === 'hang') return new Promise(() => undefined);
    const validUntil = await this.inner.extend(lock, ttl);
    if (this.extendDelayMs) await new Promise((r) => setTimeout(r, this.extendDelayMs));
    return validUntil;
  }

  async release(lock: HeldLock): Promise<boolean> {
    this.calls.release += 1;
    if (this.releaseFault === 'error') throw new Error('Connection is closed. (injected)');
    return this.inner.release(lock);
  }

  isLocked(namespace: string, key: string): Promise<boolean> {
    return this.inner.isLocked(namespace, key);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
