import { firstValueFrom } from 'rxjs';
import {
  InvalidLockKeyError,
  LockBackendError,
  LockHandle,
  LockLostError,
  LockNotSupportedError,
  LockService,
  LockServiceClosedError,
  LockTimeoutError,
  MemoryLockBackend,
} from '../../lib';
import type { LockBackend, LockServiceOptions } from '../../lib';
import { RecordingBackend } from '../support/recording-backend';
import { eventually, outcome, since } from '../support/time';
import { FaultyBackend } from './faulty-backend';

/**
 * LockService's own contract over the in-process memory backend: what it adds on top of a backend (options,
 * validation, deadlines, cancellation, bookkeeping of held locks, reentrancy, shutdown). What every backend must
 * do is in test/contract; the watchdog of one handle is in lock-handle.spec.ts.
 */

function lostPromise(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}

describe('LockService: construction', () => {
  it('refuses a missing backend and an operationTimeout that is not a finite positive number, naming the fix', () => {
    expect(() => new LockService(undefined as unknown as LockBackend)).toThrow(/LockService needs a backend/);
    const typo = { keyprefix: 'billing' } as unknown as LockServiceOptions;
    expect(() => new LockService(new MemoryLockBackend(), typo)).toThrow(
      'Unknown option "keyprefix" in LockService options. Known options: keyPrefix, defaults, operationTimeout, instanceId.',
    );
    for (const operationTimeout of [0, -1, NaN, Infinity]) {
      expect(() => new LockService(new MemoryLockBackend(), { operationTimeout })).toThrow(
        new RegExp(`Invalid operationTimeout ${String(operationTimeout)}`),
      );
    }
  });

  it('names itself by host, pid and instance id, and applies its defaults to every request', async () => {
    const recording = new RecordingBackend(new MemoryLockBackend());
    const locks = new LockService(recording, { instanceId: 'unit-a', defaults: { ttl: 1_234 } });
    try {
      expect(locks.holderId).toMatch(new RegExp(`/${process.pid}/unit-a$`));
      const lock = await locks.acquire('defaults');
      expect(recording.granted(lock.token).ttl).toBe(1_234);
      const overridden = await locks.acquire('overridden', { ttl: 4_321 });
      expect(recording.granted(overridden.token).ttl).toBe(4_321);
      await lock.release();
    } finally {
      await locks.close();
    }
  });
});

describe('LockService over the memory backend', () => {
  let recording: RecordingBackend;
  let locks: LockService;

  beforeEach(() => {
    recording = new RecordingBackend(new MemoryLockBackend());
    locks = new LockService(recording, { keyPrefix: 'unit' });
  });

  afterEach(async () => {
    await locks.close();
  });

  it('acquire and tryAcquire grant a free key; tryAcquire answers null at once while it is held; release frees it', async () => {
    const lock = await locks.acquire('k', { ttl: 10_000 });
    expect(lock.isHeld).toBe(true);
    expect(lock.key).toBe('k');
    expect(await locks.isLocked('k')).toBe(true);
    const started = performance.now();
    expect(await locks.tryAcquire('k')).toBeNull();
    expect(since(started)).toBeLessThan(1_000);
    await lock.release();
    expect(lock.state).toBe('released');
    expect(await locks.isLocked('k')).toBe(false);
    const again = await locks.tryAcquire('k');
    expect(again?.isHeld).toBe(true);
    await again!.release();
  });

  it('held() and heldCount follow acquisitions and releases; held() is a snapshot', async () => {
    const a = await locks.acquire('a');
    const b = await locks.acquire('b');
    const snapshot = locks.held();
    expect(snapshot).toEqual([a, b]);
    expect(locks.heldCount).toBe(2);
    await a.release();
    expect(locks.held()).toEqual([b]);
    expect(snapshot).toHaveLength(2);
    await b.release();
    expect(locks.heldCount).toBe(0);
  });

  it('hands one key strictly increasing fencing tokens whichever method took it', async () => {
    const tokens: bigint[] = [];
    const first = await locks.acquire('fenced');
    tokens.push(first.fencingToken);
    await first.release();
    const second = (await locks.tryAcquire('fenced'))!;
    tokens.push(second.fencingToken);
    await second.release();
    tokens.push(await locks.run('fenced', (lock) => lock.fencingToken));
    expect(tokens.every((token) => typeof token === 'bigint')).toBe(true);
    expect(tokens[1]).toBeGreaterThan(tokens[0]);
    expect(tokens[2]).toBeGreaterThan(tokens[1]);
  });

  it('times out a wait on a busy key after waitTimeout with LockTimeoutError naming the key and the wait', async () => {
    const holder = await locks.acquire('busy', { ttl: 10_000 });
    const started = performance.now();
    const { error } = await outcome(locks.acquire('busy', { waitTimeout: 300 }));
    const waited = since(started);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(error).toMatchObject({ name: 'LockTimeoutError', key: 'busy', waitTimeout: 300 });
    expect(waited).toBeGreaterThanOrEqual(290);
    expect(waited).toBeLessThan(300 + 3_000);
    // The holder was not disturbed by the waiter that gave up.
    expect(holder.isHeld).toBe(true);
    await holder.release();
  });

  it('rejects at once with the reason of a signal that was aborted before the call', async () => {
    const holder = await locks.acquire('pre-aborted', { ttl: 10_000 });
    const reason = new Error('request already cancelled');
    const started = performance.now();
    await expect(locks.acquire('pre-aborted', { waitTimeout: 10_000, signal: AbortSignal.abort(reason) })).rejects.toBe(
      reason,
    );
    expect(since(started)).toBeLessThan(1_000);
    await holder.release();
  });

  it('forgets a lock the backend reports lost: stream errors, signal aborts, held() drops it, the key is free', async () => {
    const lock = await locks.acquire('lost', { ttl: 600 });
    const streamError = firstValueFrom(lock.renewals$).then(
      () => new Error('the stream emitted instead of erroring'),
      (error: unknown) => error,
    );
    // Released behind the holder's back: the next renewal finds someone else's (no) lock.
    await recording.inner.release(recording.granted(lock.token));
    const reason = await lostPromise(lock.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    expect(await streamError).toBe(reason);
    expect(lock.isHeld).toBe(false);
    expect(locks.held()).not.toContain(lock);
    const next = await locks.tryAcquire('lost');
    expect(next).not.toBeNull();
    expect(next!.fencingToken).toBeGreaterThan(lock.fencingToken);
    await next!.release();
  });

  it('nested acquire() and tryAcquire() of a key the chain holds reuse its lock; only the outermost holder frees it', async () => {
    await locks.run(
      'doc',
      async (outer) => {
        const asked = recording.calls.acquire + recording.calls.tryAcquire;
        const started = performance.now();
        // Before, these waited for the chain's own lock: a LockTimeoutError, and null.
        const nested = await locks.acquire('doc', { waitTimeout: 10_000 });
        const tried = await locks.tryAcquire('doc');
        // Far below the wait it would have been: generous, for a loaded machine.
        expect(since(started)).toBeLessThan(5_000);
        for (const handle of [nested, tried!]) {
          expect(handle).toBeInstanceOf(LockHandle);
          expect(handle).toMatchObject({ key: 'doc', token: outer.token, fencingToken: outer.fencingToken });
          expect(handle.signal).toBe(outer.signal);
          expect(handle.renewals$).toBe(outer.renewals$);
          // expiresAt is read from the clock at each call: equal up to the millisecond it was read in.
          const [mine, theirs] = [handle, outer].map(
            (lock) => JSON.parse(JSON.stringify(lock)) as Record<string, unknown>,
          );
          expect({ ...mine, expiresAt: 0 }).toEqual({ ...theirs, expiresAt: 0 });
          expect(Math.abs(Number(mine.expiresAt) - Number(theirs.expiresAt))).toBeLessThanOrEqual(5);
        }
        // No second lock was asked of the backend.
        expect(recording.calls.acquire + recording.calls.tryAcquire).toBe(asked);
        await nested.release();
        {
          await using scoped = await locks.acquire('doc');
          expect(scoped.isHeld).toBe(true);
        }
        expect(outer.isHeld).toBe(true);
        expect(await locks.isLocked('doc')).toBe(true);
        // A held exclusive lock covers a nested read.
        await expect(locks.acquire('doc', { mode: 'read' })).resolves.toMatchObject({ token: outer.token });
      },
      { ttl: 10_000 },
    );
    expect(await locks.isLocked('doc')).toBe(false);
    // Outside the chain, a second acquire waits as before.
    const held = await locks.acquire('doc');
    expect(await locks.tryAcquire('doc')).toBeNull();
    await held.release();
  });

  it('refuses, within one call chain, to upgrade a read lock it holds (it would wait for itself)', async () => {
    await locks.run(
      'doc',
      async (read) => {
        expect(read.mode).toBe('read');
        await expect(locks.run('doc', () => 'never')).rejects.toBeInstanceOf(LockNotSupportedError);
        await expect(locks.run('doc', () => 'never', { mode: 'write' })).rejects.toThrow(/Take the write lock first/);
        await expect(locks.acquire('doc')).rejects.toBeInstanceOf(LockNotSupportedError);
        await expect(locks.tryAcquire('doc', { mode: 'write' })).rejects.toThrow(/Take the write lock first/);
        // Another read in the same chain reuses the read lock.
        await locks.run('doc', async (again) => expect(again).toBe(read), { mode: 'read' });
      },
      { mode: 'read' },
    );
    expect(await locks.isLocked('doc')).toBe(false);
  });

  it('validates the key of inspect() before anything else, and says so when a backend cannot inspect', async () => {
    // RecordingBackend has no inspect(): a valid key meets LockNotSupportedError, a bad one never gets that far.
    for (const key of ['', 'k'.repeat(1025)]) {
      await expect(locks.inspect(key)).rejects.toBeInstanceOf(InvalidLockKeyError);
    }
    await expect(locks.inspect('fine')).rejects.toBeInstanceOf(LockNotSupportedError);
    const memory = new LockService(new MemoryLockBackend(), { keyPrefix: 'unit' });
    try {
      const lock = await memory.acquire('inspected');
      expect(await memory.inspect('inspected')).toMatchObject({
        key: 'inspected',
        namespace: 'unit',
        backend: 'memory',
      });
      await lock.release();
    } finally {
      await memory.close();
    }
  });

  it('close() ends a wait in progress with LockServiceClosedError, not a backend error', async () => {
    const memory = new MemoryLockBackend();
    const service = new LockService(memory);
    await service.acquire('closing');
    const waiting = service.acquire('closing', { waitTimeout: 30_000 }).catch((error: unknown) => error);
    await eventually(
      async () => ((await service.inspect('closing')).waiters?.length ?? 0) > 0,
      'the waiter queued',
      5_000,
    );
    await service.close();
    expect(await waiting).toBeInstanceOf(LockServiceClosedError);
  });

  it('close() is idempotent, closes the backend once, and onApplicationShutdown closes too', async () => {
    await locks.acquire('open');
    const first = locks.close();
    expect(locks.close()).toBe(first);
    await first;
    await locks.onApplicationShutdown();
    expect(recording.calls.close).toBe(1);
    await expect(locks.tryAcquire('open')).rejects.toBeInstanceOf(LockServiceClosedError);
  });
});
describe('LockService (core)', () => {
  let backend: FaultyBackend;
  let locks: LockService;

  beforeEach(() => {
    backend = new FaultyBackend();
    locks = new LockService(backend, { keyPrefix: 'core-test', operationTimeout: 300 });
  });

  afterEach(async () => {
    await locks.close();
  });

  it('fails with LockBackendError, not a hang, when a backend ignores its abort signal', async () => {
    const holder = await locks.acquire('busy2', { ttl: 10_000 });
    backend.acquireFault = 'hang-ignoring-signal';
    const started = Date.now();
    const error = await locks.acquire('busy2', { waitTimeout: 200 }).catch((e) => e);
    expect(error).toBeInstanceOf(LockBackendError);
    expect(error.message).toContain('faulty-memory backend at in-process');
    expect(Date.now() - started).toBeLessThan(200 + 3_000);
    await holder.release();
  });

  it('releases a grant that arrives after the caller gave up', async () => {
    backend.tryAcquireDelayMs = 600;
    const error = await locks.tryAcquire('late').catch((e) => e);
    expect(error).toBeInstanceOf(LockBackendError);
    await new Promise((r) => setTimeout(r, 800));
    expect(backend.calls.release).toBe(1);
    expect(await locks.isLocked('late')).toBe(false);
  });

  it('waitTimeout 0 fails at once with LockTimeoutError, and Infinity waits', async () => {
    const holder = await locks.acquire('k');
    await expect(locks.acquire('k', { waitTimeout: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
    const forever = locks.acquire('k', { waitTimeout: Infinity });
    await new Promise((r) => setTimeout(r, 50));
    await holder.release();
    const next = await forever;
    expect(next.fencingToken).toBeGreaterThan(holder.fencingToken);
    await next.release();
  });

  it('run() rethrows exactly what fn threw and releases; rejects with LockLostError when the lock was lost meanwhile', async () => {
    const boom = new Error('boom');
    await expect(locks.run('r', async () => Promise.reject(boom))).rejects.toBe(boom);
    expect(await locks.isLocked('r')).toBe(false);
    const outcome = locks.run(
      'r',
      async (lock) => {
        await backend.inner.release({
          namespace: 'core-test',
          key: 'r',
          token: lock.token,
          ttl: 1,
          fencingToken: lock.fencingToken,
        });
        await lostPromise(lock.signal);
        return 'done anyway';
      },
      { ttl: 300 },
    );
    await expect(outcome).rejects.toBeInstanceOf(LockLostError);
  });

  it('current() finds the lock of the enclosing run(), and nested run() on the same key reuses it', async () => {
    expect(locks.current()).toBeUndefined();
    await locks.run('outer', async (outer) => {
      expect(locks.current()).toBe(outer);
      expect(locks.current('outer')).toBe(outer);
      await locks.run('outer', async (inner) => expect(inner).toBe(outer));
      expect(outer.isHeld).toBe(true);
      await locks.run('other', async (other) => {
        expect(locks.current()).toBe(other);
        expect(locks.current('outer')).toBe(outer);
      });
    });
    expect(locks.current('outer')).toBeUndefined();
  });

  it('close() releases every held lock and refuses new ones', async () => {
    const a = await locks.acquire('a');
    const b = await locks.acquire('b');
    expect(locks.heldCount).toBe(2);
    await locks.close();
    expect(a.state).toBe('released');
    expect(b.state).toBe('released');
    expect(locks.heldCount).toBe(0);
    await expect(locks.acquire('c')).rejects.toBeInstanceOf(LockServiceClosedError);
  });

  it('normalises keys to NFC so both spellings of the same text are one lock', async () => {
    const composed = await locks.acquire('caf\u00e9');
    expect(await locks.tryAcquire('cafe\u0301')).toBeNull();
    await composed.release();
  });
});

describe('LockService: cancelling a wait', () => {
  it("stops waiting, leaves the queue and rejects with the caller's reason when options.signal aborts", async () => {
    const locks = new LockService(new FaultyBackend());
    const holder = await locks.acquire('k');
    const controller = new AbortController();
    const waiting = locks.acquire('k', { waitTimeout: 10_000, signal: controller.signal });
    const reason = new Error('client went away');
    setTimeout(() => controller.abort(reason), 50);
    await expect(waiting).rejects.toBe(reason);
    await holder.release();
    // The cancelled waiter did not take the lock afterwards.
    expect(await locks.isLocked('k')).toBe(false);
    await expect(locks.acquire('k', { signal: 'nope' as never })).rejects.toThrow(/Invalid signal/);
    await locks.close();
  });
});
