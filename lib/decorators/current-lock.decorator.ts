import { createParamDecorator } from '@nestjs/common';
import { currentLockScope } from '../context/lock-context';

/**
 * Nest resolves parameters after interceptors, so this runs inside LockInterceptor's lock scope, whatever
 * the order of the decorators.
 */
export const currentLockFactory = (_data: unknown): unknown => {
  const locks = currentLockScope()?.handlerLockSet;
  if (!locks) return undefined;
  // Decided by what @WithLock named, not by how many distinct keys that came to: the handler's type is fixed.
  return locks.namesSeveralKeys ? locks.handles : locks.handles.values().next().value;
};

/**
 * Injects the handler's LockHandle (its `signal`, `fencingToken`, `renewals$`), or, when `@WithLock` names
 * several keys (also when two of them resolve to the same key), a `ReadonlyMap<key, LockHandle>` in acquisition
 * (sorted) order. Undefined without `@WithLock`.
 */
export const CurrentLock = createParamDecorator(currentLockFactory);
