/**
 * `@WithLock` on a method puts this stand-in on the class's prototype when the class is defined. It runs the locked
 * version that the module's explorer bound to the instance at startup, or else the method itself (a controller,
 * whose LockInterceptor locks it; an instance the module never saw, such as one a unit test made with `new`).
 *
 * So the lock sits where the method is, before anyone takes a reference to it: other explorers copy providers'
 * methods in their own `onModuleInit` (@nestjs/bullmq's processors, event listeners), which may run before ours,
 * and what they copied is this stand-in. Replacing the method on the instance at startup would have left their
 * copies unlocked, silently, depending on the order of the modules.
 */
const ORIGINAL = Symbol('DISTRIBUTED_LOCK:ORIGINAL_METHOD');
/** Metadata pointing at the stand-in, so that it is found under a decorator that wraps it and copies metadata. */
const LOCKABLE_METADATA = 'distributed-lock:lockable';

type Method = (this: unknown, ...args: unknown[]) => unknown;

/** Per instance: each stand-in's locked version. Keyed by the stand-in, so a `super` call runs its own. */
const boundVersions = new WeakMap<object, Map<Function, Method>>();

/**
 * The running apps' explorers, each binding the locked versions of an instance of its app that it did not see at
 * startup: a provider of a module loaded later with LazyModuleLoader, where Nest runs no lifecycle hook.
 */
const lateBinders = new Set<(instance: object) => void>();
/** Instances the late binders looked at: each once (a controller, or one a unit test made, is never found). */
const lookedAt = new WeakSet<object>();

/** Registers an app's late binder (see lateBinders); returns the function that removes it. */
export function addLateBinder(binder: (instance: object) => void): () => void {
  lateBinders.add(binder);
  return () => void lateBinders.delete(binder);
}

export function lockableMethod(original: Method): Method {
  const lockable = function (this: unknown, ...args: unknown[]): unknown {
    let locked: Method | undefined;
    if (typeof this === 'object' && this !== null) {
      locked = boundVersions.get(this)?.get(lockable);
      if (!locked && lateBinders.size > 0 && !lookedAt.has(this)) locked = bindLate(this, lockable);
    }
    return (locked ?? original).apply(this, args);
  };
  // Frameworks read both: the name in messages, the length to decide what to pass (bullmq's cancellation signal).
  Object.defineProperty(lockable, 'name', { value: original.name });
  Object.defineProperty(lockable, 'length', { value: original.length });
  copyMetadata(original, lockable);
  Reflect.defineMetadata(LOCKABLE_METADATA, lockable, lockable);
  Object.defineProperty(lockable, ORIGINAL, { value: original });
  return lockable;
}

/** Asks the late binders about `instance`, once; what they refuse with (a misconfiguration) fails every call. */
function bindLate(instance: object, lockable: Function): Method | undefined {
  lookedAt.add(instance);
  try {
    for (const bind of lateBinders) bind(instance);
  } catch (error) {
    lookedAt.delete(instance);
    throw error;
  }
  return boundVersions.get(instance)?.get(lockable);
}

/** The stand-in `method` is, or wraps (under a decorator that copied its metadata); undefined if none. */
export function lockableOf(method: unknown): { lockable: Function; original: Method } | undefined {
  if (typeof method !== 'function') return undefined;
  const lockable = Reflect.getMetadata(LOCKABLE_METADATA, method) as (Function & { [ORIGINAL]?: Method }) | undefined;
  const original = lockable?.[ORIGINAL];
  return lockable && original ? { lockable, original } : undefined;
}

/** Whether `instance` runs a locked version where it calls the stand-in `lockable`. */
export function hasLockedVersion(instance: object, lockable: Function): boolean {
  return boundVersions.get(instance)?.has(lockable) === true;
}

/** Makes `instance` run `locked` where it calls the stand-in `lockable`. */
export function bindLockedVersion(instance: object, lockable: Function, locked: Method): void {
  let versions = boundVersions.get(instance);
  if (!versions) boundVersions.set(instance, (versions = new Map<Function, Method>()));
  versions.set(lockable, locked);
}

/** Whether `instance` runs a locked version of its method `methodName` (for tests and diagnostics). */
export function isLockedOn(instance: object, methodName: string): boolean {
  const found = lockableOf((instance as Record<string, unknown>)[methodName]);
  return found !== undefined && hasLockedVersion(instance, found.lockable);
}

/** Other decorators' metadata stays readable on the stand-in. */
function copyMetadata(from: Function, to: Function): void {
  for (const key of Reflect.getMetadataKeys(from)) Reflect.defineMetadata(key, Reflect.getMetadata(key, from), to);
}
