import { createParamDecorator } from '@nestjs/common';
import { handlerLocksStorage } from '../interceptors/handler-locks.storage';

/**
 * Injects the handler's LockHandle (its `signal`, `fencingToken`, `renewals$`), or, when `@WithLock` names
 * several keys, a `ReadonlyMap<key, LockHandle>` in acquisition (sorted) order. Undefined without `@WithLock`.
 */
export const CurrentLock = createParamDecorator((_data: unknown) => {
  const handles = handlerLocksStorage.getStore();
  if (!handles) return undefined;
  return handles.size === 1 ? handles.values().next().value : handles;
});
