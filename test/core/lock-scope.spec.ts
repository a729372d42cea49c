import { lastValueFrom, NEVER, of } from 'rxjs';
import { LockService, MemoryLockBackend } from '../../lib';
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
