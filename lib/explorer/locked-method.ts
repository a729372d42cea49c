import { defer, isObservable, Observable } from 'rxjs';
import type { WithLockMetadata } from '../decorators/with-lock-metadata';
import { lockedObservable, lockedPromise } from '../interceptors/locked-call';
import { compileArgumentLookup } from '../key-template/argument-lookup';
import { renderKeyTemplate } from '../key-template/render-key-template';
import type { LockService } from '../lock.service';
import type { RunningCalls } from '../utils/running-calls';
import { currentLockScope } from '../context/lock-context';
import { LockServiceClosedError } from '../errors';
import { MethodExecutionContext } from './method-execution-context';

export interface LockedMethodTarget {
  instance: object;
  /** The method as written, inside the stand-in `@WithLock` put on the prototype. */
  original: (this: unknown, ...args: unknown[]) => unknown;
  /** `Class.method`, for messages. */
  where: string;
  /** `design:returntype` of the method, when TypeScript emitted it. */
  returnType: unknown;
  /** Where a call returning a Promise is tracked until it settles, so that shutdown can wait for it. */
  running: RunningCalls;
}

/**
 * Builds the locked version of a `@WithLock` provider method, which its stand-in runs for the instance. Declared
 * to return an Observable: returns a cold Observable that takes the lock on subscribe and holds it until
 * completion, error or unsubscribe. Otherwise returns a Promise that holds the lock until the method's result
 * settles, with exactly that result or error. Placeholders are checked here, at startup.
 */
export function createLockedMethod(
  locks: LockService,
  metadata: WithLockMetadata,
  target: LockedMethodTarget,
): (this: unknown, ...args: unknown[]) => unknown {
  // Parameter names are read from it.
  const { original } = target;
  const keysFor = compileKeys(metadata, original, target);
  const returnsObservable =
    target.returnType === Observable ||
    (typeof target.returnType === 'function' && target.returnType.prototype instanceof Observable);

  const locked = returnsObservable
    ? function (this: unknown, ...args: unknown[]): Observable<unknown> {
        return lockedObservable(
          locks,
          () => keysFor(args),
          metadata.options,
          () => defer(() => original.apply(this, args) as Observable<unknown>),
        );
      }
    : function (this: unknown, ...args: unknown[]): Promise<unknown> {
        return target.running.track(lockedCall(this, args));
      };
  return locked;

  /** Async, so that what a key or the method throws at once rejects the call, as the method's own promise would. */
  async function lockedCall(self: unknown, args: unknown[]): Promise<unknown> {
    const keys = keysFor(args);
    // Shutting down: the module waited for the calls running then, and releases every lock next, so a call that
    // starts now would lose its lock while it runs. Refused instead (a queue's job fails and is retried elsewhere),
    // unless it is made inside a running locked call, which was waited for.
    const topLevel = currentLockScope()?.isEmpty ?? true;
    if (target.running.isClosing && topLevel) throw new LockServiceClosedError(keys[0]);
    // A shutdown that comes while this call waits for its lock refuses it too. A nested call's wait is part of
    // the running call around it, which the shutdown waits for.
    const wait = topLevel ? target.running.waitSignal(() => new LockServiceClosedError(keys[0])) : undefined;
    const options = wait ? { ...metadata.options, signal: wait.signal } : metadata.options;
    return lockedPromise(locks, keys, options, () => {
      wait?.waited();
      const result = original.apply(self, args);
      if (isObservable(result)) {
        throw new TypeError(
          `${target.where} is locked with @WithLock and returned an Observable, but does not declare it. ` +
            `Annotate its return type (: Observable<...>) so the lock is held until the Observable completes.`,
        );
      }
      return result;
    }).finally(() => wait?.waited());
  }
}

function compileKeys(
  metadata: WithLockMetadata,
  original: Function,
  target: LockedMethodTarget,
): (args: unknown[]) => readonly string[] {
  const { factory } = metadata;
  if (factory) {
    return (args) => {
      const keys = factory(new MethodExecutionContext(args, target.instance.constructor as never, original));
      return typeof keys === 'string' ? [keys] : keys;
    };
  }
  const lookupFor = compileArgumentLookup(metadata.templates, original, target.where);
  return (args) => {
    const lookup = lookupFor(args);
    return metadata.templates.map((template) => renderKeyTemplate(template, lookup));
  };
}
