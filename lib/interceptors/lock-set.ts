import { Logger } from '@nestjs/common';
import { currentLockScope } from '../context/lock-context';
import { LOGGER_CONTEXT } from '../distributed-lock.constants';
import type { WaitHook } from '../backend-calls';
import type { LockHandle } from '../lock-handle';
import type { LockOptions } from '../lock-options';
import type { LockService } from '../lock.service';
import { validateLockKey } from '../utils/validate';

/**
 * The locks one handler or method call holds. Several keys are taken in sorted order, so two calls that
 * need the same keys in opposite order (a transfer a->b and b->a) cannot deadlock. A key the current call
 * chain already holds is reused, not acquired again (reentrancy): only the call that acquired it releases it.
 */
export class LockSet {
  private releasing: Promise<void> | undefined;
  private handleMap: ReadonlyMap<string, LockHandle> | undefined;

  private constructor(
    private readonly service: LockService,
    /** Every key of the call, in acquisition order. */
    private readonly keys: readonly string[],
    /** Each key's handle, at the key's index. */
    private readonly held: readonly LockHandle[],
    /** The handles this set acquired itself and must release. */
    private readonly owned: readonly LockHandle[],
    /**
     * The call named more than one key, even if they turned out to be one (a transfer from `x` to `x`): its
     * handler expects the Map of `@CurrentLock()` either way.
     */
    readonly namesSeveralKeys: boolean,
  ) {}

  /** Every key of the call, in acquisition order, with its handle. Built on first use: most calls never ask. */
  get handles(): ReadonlyMap<string, LockHandle> {
    return (this.handleMap ??= new Map(this.keys.map((key, index) => [key, this.held[index]])));
  }

  /** The handle when the call locks one key, else undefined. */
  get single(): LockHandle | undefined {
    return this.held.length === 1 ? this.held[0] : undefined;
  }

  /**
   * Acquires every key; if one fails, releases those already taken and rejects with that failure. `onWait`
   * learns of each wait for a busy key (see LockService.acquireCancellable). A chain rather than an async
   * loop: each await would be more promises on the path of every request.
   */
  static acquire(
    service: LockService,
    keys: readonly string[],
    options: LockOptions,
    onWait?: WaitHook,
  ): Promise<LockSet> {
    let ordered: string[];
    try {
      ordered = orderedKeys(keys);
    } catch (error) {
      return Promise.reject(error);
    }
    const held = new Array<LockHandle>(ordered.length);
    const owned: LockHandle[] = [];
    const fail = (error: unknown): Promise<never> =>
      releaseAll(owned).then(() => {
        throw error;
      });
    /** Takes the keys from `index` on: those the call chain holds already are reused, the others acquired in turn. */
    const from = (index: number): LockSet | Promise<LockSet> => {
      for (; index < ordered.length; index++) {
        const inherited = service.inheritedLock(ordered[index], options);
        if (!inherited) break;
        held[index] = inherited;
      }
      if (index === ordered.length) return new LockSet(service, ordered, held, owned, keys.length > 1);
      return service.acquireCancellable(ordered[index], options, onWait).then((handle) => {
        owned.push(handle);
        held[index] = handle;
        try {
          return from(index + 1);
        } catch (error) {
          return fail(error);
        }
      }, fail);
    };
    try {
      const locks = from(0);
      return locks instanceof LockSet ? Promise.resolve(locks) : locks;
    } catch (error) {
      return fail(error);
    }
  }

  /** Makes the handles visible to `LockService.current()` and to nested acquisitions in the current lock scope. */
  register(): void {
    const scope = currentLockScope();
    if (!scope) throw new Error('LockSet.register() must run inside runInLockScope().');
    for (const handle of this.held) scope.hold(handle);
  }

  /** Aborted, with its LockLostError, as soon as any of the locks is lost. */
  signal(): AbortSignal {
    const signals = this.held.map((handle) => handle.signal);
    // AbortSignal.any is slow on Node 20; one lock, the common case, needs none.
    return signals.length === 1 ? signals[0] : AbortSignal.any(signals);
  }

  /** The LockLostError of a lock of this set that is lost already, if any. */
  lostError(): unknown {
    let lost: unknown;
    for (const handle of this.held) {
      if (handle.state === 'lost') handle.onLost((error) => (lost ??= error))();
    }
    return lost;
  }

  /** Calls `listener` once, with its LockLostError, when any of the locks is lost; returns a remover. */
  onLost(listener: (error: unknown) => void): () => void {
    // A handle calls its listeners once: one lock needs no guard of its own.
    if (this.held.length === 1) return this.held[0].onLost(listener);
    let called = false;
    const once = (error: unknown) => {
      if (called) return;
      called = true;
      listener(error);
    };
    const removers = this.held.map((handle) => handle.onLost(once));
    return () => removers.forEach((remove) => remove());
  }

  /**
   * Releases what this set acquired, in reverse order, then calls `after` (in the same reaction: one promise fewer
   * than a `.then()` on top, on every request). Idempotent and never rejects, as long as `after` does not throw:
   * the work is done, and a lock whose release failed expires after its ttl.
   */
  release(after?: () => void): Promise<void> {
    if (this.releasing) return after ? this.releasing.then(after) : this.releasing;
    return (this.releasing = releaseAll(this.owned, after));
  }
}

const logger = new Logger(LOGGER_CONTEXT);

/** Normalised first, so that spelling variants sort and de-duplicate as the one key they are. */
function orderedKeys(keys: readonly string[]): string[] {
  if (keys.length === 1) return [validateLockKey(keys[0])];
  return [...new Set(keys.map((key) => validateLockKey(key)))].sort();
}

/** In reverse order, then `after`; never rejects. One handle, the common case, costs one promise here. */
function releaseAll(handles: readonly LockHandle[], after?: () => void): Promise<void> {
  if (handles.length === 0) return after ? Promise.resolve().then(after) : Promise.resolve();
  if (handles.length === 1) return releaseQuietly(handles[0], after);
  const released = handles.reduceRight<Promise<void>>(
    (previous, handle) => previous.then(() => releaseQuietly(handle)),
    Promise.resolve(),
  );
  return after ? released.then(after) : released;
}

function releaseQuietly(handle: LockHandle, after?: () => void): Promise<void> {
  return handle.release().then(after, (error: unknown) => {
    logger.warn(
      `Could not release lock "${handle.key}"; it expires after its ttl. ${error instanceof Error ? error.message : String(error)}`,
    );
    after?.();
  });
}
