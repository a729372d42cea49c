import { LockBackendError, LockLostError, LockService } from '../../lib';
import type { LockHandle } from '../../lib/lock-handle';
import type { HeldLock } from '../../lib/backends/lock-backend.interface';
import { monotonicNow } from '../../lib/utils/clock';
import { ExtendBatcher } from '../../lib/watchdog/extend-batcher';
import { blockEventLoop } from '../support/time';
import { FaultyBackend } from './faulty-backend';

/** FaultyBackend with the batch form of extend, so renewals go through ExtendBatcher's batches. */
class BatchingFaultyBackend extends FaultyBackend {
  batches: number[] = [];
  private answerHung: (() => void)[] = [];

  async extendMany(items: readonly { lock: HeldLock; ttl: number }[]): Promise<(number | null | Error)[]> {
    this.batches.push(items.length);
    if (this.extendFault === 'hang') {
      // Answers only when told to: a reply that comes after every deadline passed.
      await new Promise<void>((resolve) => this.answerHung.push(resolve));
    }
    return Promise.all(items.map(({ lock, ttl }) => this.inner.extend(lock, ttl)));
  }

  answerLate(): void {
    for (const answer of this.answerHung.splice(0)) answer();
  }
}

function lostPromise(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}

/** What the core hands the backend for a held handle (LockHandle keeps its own copy private). */
function heldLock(handle: LockHandle): HeldLock {
  return {
    namespace: 'batcher',
    key: handle.key,
    token: handle.token,
    mode: 'exclusive',
    ttl: 10_000,
    fencingToken: handle.fencingToken,
  };
}

describe('ExtendBatcher', () => {
  let backend: BatchingFaultyBackend;
  let locks: LockService;

  beforeEach(() => {
    backend = new BatchingFaultyBackend();
    locks = new LockService(backend, { keyPrefix: 'batcher' });
  });

  afterEach(async () => {
    backend.answerLate();
    await locks.close();
  });

  it('sends the extends of one tick as one batch and answers each with its own result', async () => {
    const a = await locks.acquire('a', { ttl: 10_000 });
    const b = await locks.acquire('b', { ttl: 10_000 });
    await b.release();
    const batcher = ExtendBatcher.for(backend);
    const deadline = monotonicNow() + 5_000;
    const [forA, forB] = await Promise.all([
      batcher.extend(heldLock(a), 20_000, { validUntil: deadline }),
      batcher.extend(heldLock(b), 20_000, { validUntil: deadline }),
    ]);
    expect(backend.batches).toEqual([2]);
    expect(forA).toBeGreaterThan(monotonicNow() + 15_000);
    // b was released: the backend answers null for it alone.
    expect(forB).toBeNull();
    await a.release();
  });

  it('never sends an extend whose validity ended before its batch went out (the loop was blocked): it is lost', async () => {
    const stalled = await locks.acquire('stalled', { ttl: 10_000 });
    const live = await locks.acquire('live', { ttl: 10_000 });
    const batcher = ExtendBatcher.for(backend);
    const extendsBefore = backend.calls.extend;
    const batchesBefore = backend.batches.length;
    const late = batcher
      .extend(heldLock(stalled), 10_000, { validUntil: monotonicNow() + 20 })
      .catch((e: unknown) => e);
    const onTime = batcher.extend(heldLock(live), 10_000, { validUntil: monotonicNow() + 60_000 });
    // Blocked past the first one's validity before the batch's turn came.
    blockEventLoop(80);
    expect(await late).toBeInstanceOf(LockLostError);
    expect(((await late) as LockLostError).reason).toMatch(/validity ended before its renewal could be sent/);
    expect(await onTime).toBeGreaterThan(monotonicNow());
    // Only the live one went out (a batch of one goes through extend()).
    expect(backend.calls.extend - extendsBefore).toBe(1);
    expect(backend.batches.length).toBe(batchesBefore);
  });

  it('rejects each extend of a silent batch at its own deadline, and ignores the answer that comes later', async () => {
    const lock = await locks.acquire('c', { ttl: 10_000 });
    const item = heldLock(lock);
    backend.extendFault = 'hang';
    const batcher = ExtendBatcher.for(backend);
    const started = monotonicNow();
    const settledAt: Record<string, number> = {};
    const outcome = (name: string, work: Promise<unknown>) =>
      work.then(
        (value) => ({ name, value }),
        (error: unknown) => {
          settledAt[name] = monotonicNow() - started;
          return { name, error };
        },
      );
    const early = outcome('early', batcher.extend(item, 10_000, { validUntil: started + 150 }));
    const late = outcome('late', batcher.extend(item, 10_000, { validUntil: started + 900 }));
    const first = await early;
    expect(first).toEqual({ name: 'early', error: expect.any(LockBackendError) });
    // The message gives the validity that was left when the call was made, not what is left at the timeout (0).
    const allowed = Number(
      /no reply within the (\d+) ms of validity left/.exec((first as { error: Error }).error.message)?.[1],
    );
    expect(allowed).toBeGreaterThanOrEqual(100);
    expect(allowed).toBeLessThanOrEqual(150);
    // The later deadline has not passed yet, so that extend is still waiting.
    expect(settledAt.late).toBeUndefined();
    const second = await late;
    expect(second).toEqual({ name: 'late', error: expect.any(LockBackendError) });
    expect(settledAt.late).toBeGreaterThanOrEqual(settledAt.early);
    expect(settledAt.late).toBeGreaterThanOrEqual(880);
    expect(backend.batches).toEqual([2]);
    backend.answerLate();
    backend.extendFault = 'none';
    await lock.release();
  });

  it('a held lock whose batched renewals go unanswered is reported lost by the end of its validity', async () => {
    const first = await locks.acquire('d', { ttl: 400 });
    const second = await locks.acquire('e', { ttl: 400 });
    const started = Date.now();
    backend.extendFault = 'hang';
    const reasons = (await Promise.all([lostPromise(first.signal), lostPromise(second.signal)])) as LockLostError[];
    for (const reason of reasons) {
      expect(reason).toBeInstanceOf(LockLostError);
      expect(reason.reason).toMatch(/could not be reached|validity ended/);
    }
    expect(Date.now() - started).toBeLessThan(400 + 1_500);
    backend.answerLate();
    backend.extendFault = 'none';
    await Promise.all([first.release(), second.release()]);
  });
});
