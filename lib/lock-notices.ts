import { Observable, Subject } from 'rxjs';
import { type LockScope, runInScopeOf } from './context/lock-context';
import type { LockLostError } from './errors';
import type { LockRenewal } from './lock-renewal';
import { jsonSafe } from './utils/json';

/** @internal How LockService makes a handle report its life to a listener that came after its grant. */
export const FOLLOW_LIFECYCLE = Symbol('LockHandle.followLifecycle');

/** @internal Direct callbacks for a handle's life: cheaper than subscribing to renewals$ on every grant. */
export interface LockLifecycleListener<Handle> {
  renewal(handle: Handle, renewal: LockRenewal, context: unknown): void;
  lost(handle: Handle, error: LockLostError, context: unknown): void;
  released(handle: Handle, context: unknown): void;
}

/**
 * @internal How a held lock tells the world about itself: the `renewals$` stream, the `signal`, loss listeners
 * and the service's lifecycle callbacks. Each is made on first use: most handles are released without anyone
 * watching. The handle decides what happened (LockHandle); this only delivers it, in the same order every time.
 */
export class LockNotices<Handle extends { readonly state: string }> {
  /** Set once, when the lock is lost; later subscribers and signal readers learn it at once. */
  lostError: LockLostError | undefined;
  private abortController: AbortController | undefined;
  private subject: Subject<LockRenewal> | undefined;
  private stream: Observable<LockRenewal> | undefined;
  /** An array, cheaper than a Set for the one or two there are. */
  private lossListeners: ((error: LockLostError) => void)[] | undefined;
  /**
   * The call chain that holds the lock (the first LockScope that held it), where renewals and the loss are
   * delivered: they come from a shared timer or connection, which carries some other call's scope, so a
   * subscriber there would see that call's locks in `LockService.current()` and reuse them (reentrancy). A
   * lock no scope holds (a plain `acquire()`) delivers outside every scope.
   */
  private scope: LockScope | undefined;

  constructor(
    private readonly handle: Handle,
    private lifecycle: LockLifecycleListener<Handle> | undefined,
    private readonly context: unknown,
  ) {}

  /**
   * Starts calling `lifecycle` from now on (a service's first event listener came after this lock was granted),
   * unless the handle has one already or has ended.
   */
  follow(lifecycle: LockLifecycleListener<Handle>): void {
    if (this.lifecycle || this.lostError || this.handle.state !== 'held') return;
    this.lifecycle = lifecycle;
  }

  get renewals$(): Observable<LockRenewal> {
    // Late subscribers still learn how the lock ended.
    return (this.stream ??= new Observable<LockRenewal>((subscriber) => {
      if (this.lostError) return subscriber.error(this.lostError);
      if (this.handle.state === 'released') return subscriber.complete();
      return (this.subject ??= new Subject<LockRenewal>()).subscribe(subscriber);
    }));
  }

  get signal(): AbortSignal {
    if (!this.abortController) {
      this.abortController = new AbortController();
      if (this.lostError) this.abortController.abort(this.lostError);
    }
    return this.abortController.signal;
  }

  onLost(listener: (error: LockLostError) => void): () => void {
    if (this.lostError) {
      listener(this.lostError);
      return () => undefined;
    }
    (this.lossListeners ??= []).push(listener);
    return () => {
      const index = this.lossListeners?.indexOf(listener) ?? -1;
      if (index >= 0) this.lossListeners!.splice(index, 1);
    };
  }

  /** Whether anyone would see a renewal: nobody usually does, and then none is built. */
  get watched(): boolean {
    return this.subject !== undefined || this.lifecycle !== undefined;
  }

  deliverIn(scope: LockScope): void {
    this.scope ??= scope;
  }

  renewal(renewal: LockRenewal): void {
    jsonSafe(renewal);
    runInScopeOf(this.scope, () => {
      this.subject?.next(renewal);
      this.lifecycle?.renewal(this.handle, renewal, this.context);
    });
  }

  lost(error: LockLostError): void {
    this.lostError = error;
    const listeners = this.lossListeners;
    this.lossListeners = undefined;
    runInScopeOf(this.scope, () => {
      this.subject?.error(error);
      this.abortController?.abort(error);
      listeners?.forEach((listener) => listener(error));
      this.lifecycle?.lost(this.handle, error, this.context);
    });
  }

  /** The handle ended without a loss (released, or left to expire); `wasHeld`: it was held until then. */
  ended(wasHeld: boolean): void {
    this.lossListeners = undefined;
    if (wasHeld) {
      this.subject?.complete();
      this.lifecycle?.released(this.handle, this.context);
    }
  }
}
