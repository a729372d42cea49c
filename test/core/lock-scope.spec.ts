import { firstValueFrom, lastValueFrom, map, NEVER, of } from 'rxjs';
import { LockHandle, LockService, LockTimeoutError, MemoryLockBackend } from '../../lib';
import { currentLockScope, LockScope } from '../../lib/context/lock-context';
import { lockedObservable, lockedPromise } from '../../lib/interceptors/locked-call';

/**
 * A lock scope can outlive its call: every async resource made in it (a timer, a socket write request) carries
 * it, and some stay reachable after the call ended. Once the call has released its locks, its scope must no
 * longer reach them, nor the request; otherwise each call's handles stay in memory until a full collection.
 */
describe('LockScope after its call', () => {
  const call = { name: 'an ExecutionContext' };

  /** `requestId`: a request id already read is kept (a string); one never read is dropped with its source. */
  function expectEmptied(scope: LockScope | undefined, requestId?: string): void {
    expect(scope).toBeInstanceOf(LockScope);
    expect(scope!.handles()).toEqual([]);
    expect(scope!.handlerLocks).toBeUndefined();
    expect(scope!.locks(call)).toBe(false);
    expect(scope!.requestId).toBe(requestId);
  }

  it('a @WithLock call (the interceptor path) empties its scope once released, and not before', async () => {
    const locks = new LockService(new MemoryLockBackend());
    let scope: LockScope | undefined;
    const work = () => {
      scope = currentLockScope();
      // While the handler runs, the scope has the lock, the call and the request id.
      expect(scope!.handlerLocks?.get('file:1')?.isHeld).toBe(true);
      expect(scope!.handles()).toHaveLength(1);
      expect(scope!.locks(call)).toBe(true);
      expect(scope!.requestId).toBe('req-1');
      return of('done');
    };
    const result = lockedObservable(locks, () => ['file:1'], {}, work, { requestId: () => 'req-1', call });
    await expect(lastValueFrom(result)).resolves.toBe('done');
    expectEmptied(scope, 'req-1');
    await locks.close();
  });

  it('a call that ends by an error, or by unsubscribing, empties its scope too', async () => {
    const locks = new LockService(new MemoryLockBackend());
    let failed: LockScope | undefined;
    const failing = lockedObservable(
      locks,
      () => ['file:2'],
      {},
      () => {
        failed = currentLockScope();
        throw new Error('handler failed');
      },
      { requestId: () => 'req-2', call },
    );
    await expect(lastValueFrom(failing)).rejects.toThrow('handler failed');
    expectEmptied(failed);

    let left: LockScope | undefined;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    locks.events$.subscribe((event) => event.type === 'released' && release());
    const endless = lockedObservable(
      locks,
      () => ['file:3'],
      {},
      () => {
        left = currentLockScope();
        return NEVER;
      },
      { call },
    );
    const subscription = endless.subscribe({ error: () => undefined });
    await expect(locks.isLocked('file:3')).resolves.toBe(true);
    subscription.unsubscribe();
    await released;
    // Emptied in a reaction to the release: every one queued has run by the next turn of the event loop.
    await new Promise((resolve) => setImmediate(resolve));
    expectEmptied(left);
    await locks.close();
  });

  it('a locked provider method and LockService.run() empty their scopes once released', async () => {
    const locks = new LockService(new MemoryLockBackend());
    let method: LockScope | undefined;
    await lockedPromise(locks, ['order:1'], {}, () => {
      method = currentLockScope();
      expect(method!.handles()).toHaveLength(1);
    });
    expect(method!.handles()).toEqual([]);
    expect(method!.handlerLocks).toBeUndefined();

    let run: LockScope | undefined;
    await locks.run('order:2', () => {
      run = currentLockScope();
      expect(locks.current()?.key).toBe('order:2');
    });
    expect(run!.handles()).toEqual([]);
    await expect(
      locks.run('order:3', () => {
        run = currentLockScope();
        throw new Error('work failed');
      }),
    ).rejects.toThrow('work failed');
    expect(run!.handles()).toEqual([]);
    await locks.close();
  });

  it('a nested call empties only its own scope: the enclosing call keeps its lock', async () => {
    const locks = new LockService(new MemoryLockBackend());
    await lockedPromise(locks, ['outer'], {}, async () => {
      const outer = currentLockScope()!;
      await lockedPromise(locks, ['inner'], {}, () => {
        expect(locks.current('outer')?.isHeld).toBe(true);
        expect(locks.current('inner')?.isHeld).toBe(true);
      });
      expect(outer.handles().map((handle) => handle.key)).toEqual(['outer']);
      expect(locks.current('outer')?.isHeld).toBe(true);
      expect(locks.current('inner')).toBeUndefined();
    });
    await locks.close();
  });
});

/**
 * Renewals and losses come from a timer (and, on some backends, a connection) shared by every held lock. Such a
 * timer carries the scope of whichever call armed it; what it delivers must run in the call chain that holds the
 * lock instead, or code there would take another call's locks for its own.
 */
describe("a handle's renewals and loss are delivered in the call chain that holds it", () => {
  /** The first renewal of `lock`, run through `probe` where the subscriber sees it. */
  function onFirstRenewal<T>(lock: LockHandle, probe: () => T | Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const subscription = lock.renewals$.subscribe({
        next: () => {
          subscription.unsubscribe();
          Promise.resolve().then(probe).then(resolve, reject);
        },
        error: reject,
      });
    });
  }

  it("another call's locks never show in a plain handle's renewals, and are not reused there", async () => {
    const locks = new LockService(new MemoryLockBackend());
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    // A call that holds 'A' and, inside its scope, a lock with a short ttl, so the shared timer is armed there.
    const other = locks.run('A', async () => {
      const short = await locks.acquire('short', { ttl: 150 });
      entered();
      await finished;
      await short.release();
    });
    await inside;
    const plain = await locks.acquire('B', { ttl: 300 });
    const seen = await onFirstRenewal(plain, async () => {
      const current = locks.current()?.key;
      const reused = await locks
        .run('A', () => 'reused A', { waitTimeout: 0 })
        .catch((error: unknown) => (error instanceof LockTimeoutError ? 'A busy' : error));
      return { current, currentA: locks.current('A')?.key, reused };
    });
    expect(seen).toEqual({ current: undefined, currentA: undefined, reused: 'A busy' });
    finish();
    await other;
    await plain.release();
    await locks.close();
  });

  it("a locked call's renewals see its own lock: current() finds it, and a nested lock of its key is reentrant", async () => {
    const locks = new LockService(new MemoryLockBackend());
    const seen = await locks.run(
      'C',
      (lock) =>
        onFirstRenewal(lock, async () => ({
          current: locks.current() === lock,
          nested: await locks.run('C', (again) => again === lock, { waitTimeout: 0 }),
        })),
      { ttl: 300 },
    );
    expect(seen).toEqual({ current: true, nested: true });

    // A @WithLock handler's Observable (SSE) built on its lock's renewals.
    const handlerSees = lockedObservable(
      locks,
      () => ['file:sse'],
      { ttl: 300 },
      () => {
        const lock = locks.current('file:sse')!;
        return lock.renewals$.pipe(map(() => locks.current()?.key));
      },
    );
    await expect(firstValueFrom(handlerSees)).resolves.toBe('file:sse');
    await locks.close();
  });

  it("a lost lock's signal and renewals error reach listeners in the call chain that held it", async () => {
    const locks = new LockService(new MemoryLockBackend());
    let held: LockScope | undefined;
    const seen: Record<string, LockScope | undefined> = {};
    const outcome = await locks
      .run(
        'D',
        (lock) => {
          held = currentLockScope();
          return new Promise<void>((resolve) => {
            lock.signal.addEventListener('abort', () => (seen.abort = currentLockScope()));
            lock.renewals$.subscribe({ error: () => resolve(void (seen.error = currentLockScope())) });
          });
        },
        // Renewals stop after maxHold, so the lock expires and is reported lost.
        { ttl: 200, maxHold: 200 },
      )
      .catch((error: unknown) => error);
    expect(outcome).toMatchObject({ name: 'LockLostError', key: 'D' });
    expect(held).toBeInstanceOf(LockScope);
    expect(seen).toEqual({ abort: held, error: held });

    // A lock no call holds: its loss reaches listeners outside every scope.
    const plain = await locks.acquire('E', { ttl: 200, maxHold: 200 });
    const outside = await new Promise<LockScope | null | undefined>((resolve) =>
      plain.signal.addEventListener('abort', () => resolve(currentLockScope())),
    );
    expect(outside).toBeUndefined();
    await locks.close();
  });
});
