import type { AcquireRequest, LockGrant } from '../../lib/backends/lock-backend.interface';
import { LockService, LockTimeoutError } from '../../lib';
import { performance } from 'node:perf_hooks';
import { eventually } from '../support/time';
import { FaultyBackend } from './faulty-backend';

/** Records the signal of every acquire, and can keep listening to it after the acquire settled (against the contract). */
class SignalRecordingBackend extends FaultyBackend {
  readonly signals: AbortSignal[] = [];
  keepListening = false;
  readonly lateAborts: unknown[] = [];

  override acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    this.signals.push(signal);
    if (this.keepListening) signal.addEventListener('abort', () => this.lateAborts.push(signal.reason));
    return super.acquire(request, signal);
  }
}

describe('the signal LockService hands a backend for a wait', () => {
  it('reuses a signal only when it was never aborted and the backend no longer listens to it', async () => {
    const backend = new SignalRecordingBackend();
    const locks = new LockService(backend, { defaults: { waitTimeout: 1_000 } });

    // Uncontended grants settle without an abort: the next wait may get the same signal.
    await (await locks.acquire('a')).release();
    await (await locks.acquire('b')).release();
    expect(backend.signals[1]).toBe(backend.signals[0]);
    expect(backend.signals[0].aborted).toBe(false);

    // A wait that times out aborts its signal: that one is never handed out again.
    const held = await locks.acquire('busy');
    await expect(locks.acquire('busy', { waitTimeout: 30 })).rejects.toBeInstanceOf(LockTimeoutError);
    const timedOut = backend.signals[backend.signals.length - 1];
    expect(timedOut.aborted).toBe(true);
    await (await locks.acquire('c')).release();
    expect(backend.signals[backend.signals.length - 1]).not.toBe(timedOut);
    expect(backend.signals[backend.signals.length - 1].aborted).toBe(false);

    // A backend that keeps listening after its acquire settled never sees a later wait's abort through it.
    backend.keepListening = true;
    await (await locks.acquire('d')).release();
    backend.keepListening = false;
    const stillListened = backend.signals[backend.signals.length - 1];
    await expect(locks.acquire('busy', { waitTimeout: 30 })).rejects.toBeInstanceOf(LockTimeoutError);
    expect(backend.signals[backend.signals.length - 1]).not.toBe(stillListened);
    expect(backend.lateAborts).toEqual([]);

    await held.release();
    await locks.close();
  });
});

/** A backend whose first attempt comes before any wait (as Redis's), over a server that answers slowly. */
class SlowFastPathBackend extends FaultyBackend {
  readonly tryBeforeWait = true;
}

describe("the caller's signal during an acquire's first attempt", () => {
  it.each([
    ['the default waitTimeout', 10_000],
    ['waitTimeout 0', 0],
  ])(
    'with %s, an abort ends the attempt at once with its reason, and the grant that comes later goes back',
    async (_, waitTimeout) => {
      const backend = new SlowFastPathBackend();
      backend.tryAcquireDelayMs = 1_500;
      const locks = new LockService(backend);
      try {
        const controller = new AbortController();
        const reason = new Error('the caller gave up');
        const started = performance.now();
        const acquiring = locks.acquire('slow-server', { waitTimeout, signal: controller.signal });
        acquiring.catch(() => undefined);
        expect(backend.calls.tryAcquire).toBe(1);
        controller.abort(reason);
        await expect(acquiring).rejects.toBe(reason);
        // Well before the server's answer: the abort did not wait for it.
        expect(performance.now() - started).toBeLessThan(1_000);
        // The answer, a grant, arrives later and is released: the key is free and nobody holds a handle.
        await eventually(async () => backend.calls.release === 1, 'the late grant released', 10_000);
        expect(await locks.isLocked('slow-server')).toBe(false);
        expect(locks.held()).toHaveLength(0);
      } finally {
        await locks.close();
      }
    },
  );
});
