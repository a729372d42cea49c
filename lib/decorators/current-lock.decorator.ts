import { createParamDecorator } from '@nestjs/common';
import { currentLockScope } from '../context/lock-context';

/**
 * Nest resolves parameters after interceptors, so this runs inside LockInterceptor's lock scope, whatever
 * the order of the decorators.
 */
export const currentLockFactory = (_data: unknown): unknown => {
  const handles = currentLockScope()?.handlerLocks;
  if (!handles) return undefined;
  return handles.size === 1 ? handles.values().next().value : handles;
};

/**
 * Injects the handler's LockHandle (its `signal`, `fencingToken`, `renewals$`), or, when `@WithLock` names
 * several keys, a `ReadonlyMap<key, LockHandle>` in acquisition (sorted) order. Undefined without `@WithLock`.
 */
export const CurrentLock = createParamDecorator(currentLockFactory);
