import { firstValueFrom, lastValueFrom, take, toArray } from 'rxjs';
import { LockLostError, LockService } from '../../lib';
import type { LockRenewal } from '../../lib';
import { blockEventLoop } from '../support/time';
import { FaultyBackend } from './faulty-backend';

function lostPromise(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}

describe('LockHandle watchdog (core, over the memory backend with injected faults)', () => {
  let backend: FaultyBackend;
  let locks: LockService;

  beforeEach(() => {
    backend = new FaultyBackend();
    locks = new LockService(backend, { keyPrefix: 'core-test' });
  });

  afterEach(async () => {
    await locks.close();
  });

  it('renews every ttl/3 and keeps the key from others for several ttls', async () => {
    const lock = await locks.acquire('file:1', { ttl: 1_500 });
    const renewals = await firstValueFrom(lock.renewals$.pipe(take(6), toArray()));
    expect(renewals.map((r) => r.type)).toEqual(Array(6).fill('renewed'));
    expect(renewals.map((r) => (r as { renewalCount: number }).renewalCount)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await locks.tryAcquire('file:1')).toBeNull();
    expect(lock.isHeld).toBe(true);
    expect(lock.expiresAt).toBeGreaterThan(Date.now());
    await lock.release();
  });

  /** Holds a 3 s lock while every renewal's answer takes `delayMs`; resolves once five renewals came back. */
  async function holdThroughSlowRenewals(key: string, delayMs: number): Promise<void> {
    backend.extendDelayMs = delayMs;
    const lock = await locks.acquire(key, { ttl: 3_000 });
    const lost = lostPromise(lock.signal);
    const renewed = firstValueFrom(lock.renewals$.pipe(take(5), toArray()));
    await expect(Promise.race([renewed, lost.then((reason) => Promise.reject(reason))])).resolves.toHaveLength(5);
    expect(lock.isHeld).toBe(true);
    backend.extendDelayMs = 0;
    // Release waits for the renewals in flight, then deletes: nobody holds it afterwards.
    await lock.release();
    expect(await locks.isLocked(key)).toBe(false);
  }

  it('keeps a lock whose renewals take 40 % of its ttl: the next renewal leaves room for the same latency', async () => {
    // A renewal every ttl/3 that takes 1.2 s of a 3 s ttl would come back after the validity it had.
    await holdThroughSlowRenewals('slow-renewals', 1_200);
  }, 30_000);

  it('keeps a lock whose renewals take more than half its ttl: a renewal unanswered for a period gets a second beside it', async () => {
    // One after the other, a renewal sent as the previous one answers (1.6 s after it was sent) comes back
    // 3.2 s after the validity it extends began: past a 3 s ttl.
    await holdThroughSlowRenewals('slower-renewals', 1_600);
  }, 30_000);

  it('completes the stream on release, stops renewing, and release is idempotent', async () => {
    const lock = await locks.acquire('file:2', { ttl: 1_500 });
    const all = lastValueFrom(lock.renewals$.pipe(toArray()));
    await firstValueFrom(lock.renewals$);
    await Promise.all([lock.release(), lock.release()]);
    await lock.release();
    await expect(all).resolves.toBeDefined();
    const extendsAtRelease = backend.calls.extend;
    // Two renewal periods (ttl/3 = 500 ms): a watchdog still running would have called extend.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(backend.calls.extend).toBe(extendsAtRelease);
    expect(backend.calls.release).toBe(1);
    expect(lock.state).toBe('released');
    expect(lock.signal.aborted).toBe(false);
    // A late subscriber is told it ended.
    await expect(lastValueFrom(lock.renewals$, { defaultValue: 'done' })).resolves.toBe('done');
  });

  it('reports a lock deleted behind its back as lost: stream errors, signal aborts, release leaves the new holder alone', async () => {
    const lock = await locks.acquire('file:3', { ttl: 300 });
    const streamError = lastValueFrom(lock.renewals$).catch((e) => e);
    // Someone else's view: the key expired and was taken over.
    await backend.inner.release({
      namespace: 'core-test',
      key: 'file:3',
      token: lock.token,
      ttl: 300,
      fencingToken: lock.fencingToken,
    });
    const thief = await locks.acquire('file:3', { ttl: 10_000 });
    const reason = await lostPromise(lock.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    expect(await streamError).toBe(reason);
    expect((reason as LockLostError).message).toContain('file:3');
    await lock.release();
    expect(await locks.isLocked('file:3')).toBe(true);
    expect(thief.isHeld).toBe(true);
    expect(thief.fencingToken).toBeGreaterThan(lock.fencingToken);
    await thief.release();
  });

  it('never extends after the event loop was blocked past the validity: reports lost instead', async () => {
    const lock = await locks.acquire('file:4', { ttl: 300 });
    const lost = lostPromise(lock.signal);
    const extendsBefore = backend.calls.extend;
    blockEventLoop(700);
    const reason = (await lost) as LockLostError;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(reason.reason).toMatch(/validity ended/);
    expect(backend.calls.extend).toBe(extendsBefore);
  });

  it.each(['signal', 'renewals$', 'events$'] as const)(
    'release() and extend() called from the %s loss notice of a first renewal return promises (found from outside: release threw a TypeError there)',
    async (notice) => {
      const lock = await locks.acquire('file:in-notice', { ttl: 300 });
      const calls: { threw?: unknown; released?: Promise<unknown>; extended?: Promise<unknown> } = {};
      const onLoss = () => {
        try {
          calls.released = lock.release();
          calls.extended = lock.extend(300);
        } catch (error) {
          calls.threw = error;
        }
      };
      const lost = lostPromise(lock.signal);
      if (notice === 'signal') lock.signal.addEventListener('abort', onLoss, { once: true });
      if (notice === 'renewals$') lock.renewals$.subscribe({ error: onLoss });
      if (notice === 'events$') {
        locks.events$.subscribe((event) => event.type === 'lost' && onLoss());
      }
      blockEventLoop(700);
      await lost;
      expect(calls.threw).toBeUndefined();
      await expect(calls.released).resolves.toBeUndefined();
      await expect(calls.extended).rejects.toBeInstanceOf(LockLostError);
      // The key is free again: the quiet delete of a lost lock ran.
      await (await locks.acquire('file:in-notice', { waitTimeout: 1_000 })).release();
    },
  );

  it('a signal read right after the loop was blocked past the validity is aborted already, before any timer runs', async () => {
    const lock = await locks.acquire('file:read-after-pause', { ttl: 300 });
    blockEventLoop(700);
    // Found from outside: a handler whose own timer ran first read aborted === false, and started its write.
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(() => lock.signal.throwIfAborted()).toThrow(LockLostError);
    expect(lock.isHeld).toBe(false);
  });

  it('emits at-risk on a transient renewal failure and recovers when the server answers again', async () => {
    const lock = await locks.acquire('file:5', { ttl: 900 });
    const events: LockRenewal[] = [];
    lock.renewals$.subscribe((event) => events.push(event));
    backend.extendFault = 'error';
    await firstValueFrom(lock.renewals$);
    expect(events[0].type).toBe('at-risk');
    expect((events[0] as { remaining: number }).remaining).toBeGreaterThan(0);
    backend.extendFault = 'none';
    const next = await firstValueFrom(lock.renewals$.pipe(take(1)));
    expect(['renewed', 'at-risk']).toContain(next.type);
    const renewed = await firstValueFrom(lock.renewals$);
    expect(renewed.type).toBe('renewed');
    expect(lock.isHeld).toBe(true);
    await lock.release();
  });

  it('reports lost by the end of validity when the server stays unreachable or silent', async () => {
    for (const fault of ['error', 'hang'] as const) {
      const lock = await locks.acquire(`file:6-${fault}`, { ttl: 400 });
      const started = Date.now();
      backend.extendFault = fault;
      const reason = (await lostPromise(lock.signal)) as LockLostError;
      expect(reason).toBeInstanceOf(LockLostError);
      expect(reason.reason).toMatch(/could not be reached|validity ended/);
      expect(Date.now() - started).toBeLessThan(400 + 1_500);
      backend.extendFault = 'none';
      await lock.release();
    }
  });

  it('warns at-risk while validity remains when a renewal goes a whole period unanswered (a silent server)', async () => {
    const lock = await locks.acquire('file:silent', { ttl: 900 });
    const events: LockRenewal[] = [];
    lock.renewals$.subscribe({ next: (event) => events.push(event), error: () => undefined });
    backend.extendFault = 'hang';
    const reason = (await lostPromise(lock.signal)) as LockLostError;
    backend.extendFault = 'none';
    expect(reason).toBeInstanceOf(LockLostError);
    // Before, a renewal that never answered gave no warning at all: the loss was the first news.
    const warnings = events.filter((event) => event.type === 'at-risk');
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings[0]).toMatchObject({ remaining: expect.any(Number), error: expect.any(Error) });
    expect((warnings[0] as { remaining: number }).remaining).toBeGreaterThan(0);
    expect((warnings[0] as { error: Error }).error.message).toMatch(/no answer for a whole renewal period/);
  });

  it('never reports renewed for an answer read after its validity ended (the loop was blocked while it waited)', async () => {
    backend.extendDelayMs = 150;
    const lock = await locks.acquire('file:late-answer', { ttl: 600 });
    const events: string[] = [];
    lock.renewals$.subscribe({ next: (event) => events.push(event.type), error: () => undefined });
    const lost = lostPromise(lock.signal);
    const extendsBefore = backend.calls.extend;
    // The first renewal is sent at about ttl/3; its answer is then 150 ms away when the loop blocks.
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (backend.calls.extend === extendsBefore) return;
        clearInterval(poll);
        resolve();
      }, 2);
    });
    blockEventLoop(1_500);
    const reason = (await lost) as LockLostError;
    backend.extendDelayMs = 0;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(reason.reason).toMatch(/validity ended/);
    expect(events).not.toContain('renewed');
  });

  it('extend(ttl) changes the validity and later renewals use it; extend on a lost lock rejects with LockLostError', async () => {
    const lock = await locks.acquire('file:7', { ttl: 1_500 });
    await lock.extend(5_000);
    expect(lock.expiresAt - Date.now()).toBeGreaterThan(3_000);
    await lock.release();
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    await expect(lock.extend(0)).rejects.toThrow(/Invalid ttl 0/);
  });
});
