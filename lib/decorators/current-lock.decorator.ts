import { createParamDecorator } from '@nestjs/common';
import { currentLockScope } from '../context/lock-context';

/**
 * Injects the handler's LockHandle (its `signal`, `fencingToken`, `renewals$`), or, when `@WithLock` names
 * several keys, a `ReadonlyMap<key, LockHandle>` in acquisition (sorted) order. Undefined without `@WithLock`.
 */
export const CurrentLock = createParamDecorator((_data: unknown) => {
  const handles = currentLockScope()?.handlerLocks;
  if (!handles) return undefined;
  return handles.size === 1 ? handles.values().next().value : handles;
});
