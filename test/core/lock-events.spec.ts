import { Logger } from '@nestjs/common';
import { firstValueFrom, lastValueFrom, tap, toArray } from 'rxjs';
import { LockLostError, LockService, LockTimeoutError, MemoryLockBackend } from '../../lib';
import type { LockEvent } from '../../lib';
import { runInLockScope } from '../../lib/context/lock-context';
import { blockEventLoop } from '../support/time';
import { FaultyBackend } from './faulty-backend';

describe('LockService.events$ and maxHold', () => {
  it('reports acquired, renewed, released and timeout with key, holder, request id, wait and hold times', async () => {
    const locks = new LockService(new MemoryLockBackend(), { keyPrefix: 'events', instanceId: 'api-1' });
    const events: LockEvent[] = [];
    locks.events$.subscribe((event) => events.push(event));
    await runInLockScope(async () => {
      const lock = await locks.acquire('file:1', { ttl: 1_500 });
      await firstValueFrom(lock.renewals$);
      await expect(locks.acquire('file:1', { waitTimeout: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
      await lock.release();
    }, 'req-42');
    // On a slow machine a renewal may land while the wait runs: either may come first.
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('acquired');
    expect(types[1]).toBe('renewed');
    expect(types.at(-1)).toBe('released');
    expect(types.filter((type) => type === 'timeout')).toHaveLength(1);
    expect(types.slice(1, -1).every((type) => type === 'renewed' || type === 'timeout')).toBe(true);
    for (const event of events) {
      expect(event).toMatchObject({
        key: 'file:1',
        namespace: 'events',
        backend: 'memory',
        requestId: 'req-42',
        mode: 'exclusive',
      });
      expect(event.holder).toMatch(/\/\d+\/api-1$/);
    }
    const acquired = events[0] as Extract<LockEvent, { type: 'acquired' }>;
    const timeout = events.find((event) => event.type === 'timeout') as Extract<LockEvent, { type: 'timeout' }>;
    const released = events.at(-1) as Extract<LockEvent, { type: 'released' }>;
    expect(acquired.fencingToken).toBe(1n);
    expect(acquired.waitTime).toBeGreaterThanOrEqual(0);
    expect(timeout.waitTime).toBeGreaterThanOrEqual(40);
    expect(released.holdTime).toBeGreaterThanOrEqual(40);
    await locks.close();
  });

  it('reports at-risk then lost when renewals keep failing', async () => {
    const backend = new FaultyBackend();
    const locks = new LockService(backend);
    const events: LockEvent[] = [];
    locks.events$.subscribe((event) => events.push(event));
    // Long enough that the first failed renewal (at ttl / 3) still leaves validity on a loaded machine, where a
    // stall past a 300 ms ttl would go straight to "lost".
    const lock = await locks.acquire('k', { ttl: 3_000 });
    backend.extendFault = 'error';
    await lastValueFrom(lock.renewals$).catch(() => undefined);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('acquired');
    expect(types).toContain('at-risk');
    expect(types[types.length - 1]).toBe('lost');
    expect(types.indexOf('at-risk')).toBeLessThan(types.indexOf('lost'));
    await locks.close();
  });

  it('reports the renewals, loss and release of locks granted before anyone subscribed', async () => {
    const backend = new FaultyBackend();
    const locks = new LockService(backend);
    const kept = await locks.acquire('kept', { ttl: 3_000 });
    const failing = await locks.acquire('failing', { ttl: 3_000 });
    // Subscribed late, as telemetry attached after start-up or a dashboard opened later.
    const events: LockEvent[] = [];
    locks.events$.subscribe((event) => events.push(event));
    await firstValueFrom(kept.renewals$);
    await kept.release();
    backend.extendFault = 'error';
    await lastValueFrom(failing.renewals$).catch(() => undefined);
    const of = (key: string) => events.filter((event) => event.key === key).map((event) => event.type);
    expect(of('kept')[0]).toBe('renewed');
    expect(of('kept').at(-1)).toBe('released');
    expect(of('failing').at(-1)).toBe('lost');
    expect(events.some((event) => event.type === 'acquired')).toBe(false);
    await locks.close();
  });

  it('close() warns about every lock it could not release, and still closes', async () => {
    const backend = new FaultyBackend();
    const locks = new LockService(backend);
    await locks.acquire('stays:1');
    await locks.acquire('stays:2');
    backend.releaseFault = 'error';
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      await expect(locks.close()).resolves.toBeUndefined();
      const warnings = warn.mock.calls.map(([message]) => String(message));
      for (const key of ['stays:1', 'stays:2']) {
        expect(warnings).toContainEqual(
          expect.stringMatching(
            new RegExp(
              `Could not release lock "${key}" on close; it stays locked until its ttl expires\\. .*Connection is closed`,
            ),
          ),
        );
      }
    } finally {
      warn.mockRestore();
    }
  });

  it('maxHold: the watchdog stops renewing, and the lock expires as lost at the end of its validity', async () => {
    const backend = new MemoryLockBackend();
    const locks = new LockService(backend);
    const started = Date.now();
    const lock = await locks.acquire('stuck', { ttl: 200, maxHold: 500 });
    let renewed = 0;
    const error = await lastValueFrom(
      lock.renewals$.pipe(tap((event) => (renewed += event.type === 'renewed' ? 1 : 0))),
    ).catch((e) => e);
    // Every ttl/3 until maxHold is less than a ttl away, then one last renewal up to it: 6 here, at most. Found from
    // outside: renewals bunched up before maxHold, each asking for less and ever sooner.
    expect(renewed).toBeGreaterThan(0);
    expect(renewed).toBeLessThanOrEqual(7);
    expect(error).toBeInstanceOf(LockLostError);
    expect(error.message).toMatch(/maxHold=500/);
    // Found from outside: an idle loop was blamed ("the event loop was blocked") when maxHold ended the lock.
    expect(error.message).not.toMatch(/blocked/);
    expect(lock.signal.aborted).toBe(true);
    const heldFor = Date.now() - started;
    expect(heldFor).toBeGreaterThanOrEqual(500);
    expect(heldFor).toBeLessThan(500 + 200 + 1_500);
    // Someone else gets it once it expired.
    const next = await locks.acquire('stuck', { waitTimeout: 2_000 });
    await next.release();
    await expect(locks.acquire('x', { maxHold: 0 })).rejects.toThrow(/Invalid maxHold 0/);
    await locks.close();
  });

  it('maxHold: a loop blocked past both maxHold and the validity still names maxHold as the cause', async () => {
    const locks = new LockService(new MemoryLockBackend());
    const lock = await locks.acquire('blocked', { ttl: 200, maxHold: 100 });
    // Blocks before the watchdog's first tick, so no tick ever saw maxHold pass.
    blockEventLoop(400);
    const error = await lastValueFrom(lock.renewals$).catch((e) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect(error.message).toMatch(/maxHold=100 ms.*event loop was blocked: noticed \d+ ms late/);
    expect(lock.signal.aborted).toBe(true);
    await locks.close();
  });

  it('completes events$ on close()', async () => {
    const locks = new LockService(new MemoryLockBackend());
    const all = lastValueFrom(locks.events$.pipe(toArray()));
    await (await locks.acquire('a')).release();
    await locks.close();
    expect((await all).map((e) => e.type)).toEqual(['acquired', 'released']);
  });
});
