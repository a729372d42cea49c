import { LockNotSupportedError } from '../errors';
import type { LockHandle } from '../lock-handle';
import type { LockMode } from '../lock-options';
import { validateLockKey } from '../utils/validate';
import { currentLockScope } from './lock-context';

/** See LockService.current(): the held handle of the current call chain in `namespace`, for `key` or the innermost. */
export function currentInScope(namespace: string, key?: string): LockHandle | undefined {
  const scope = currentLockScope();
  if (!scope) return undefined;
  if (key === undefined) {
    const all = scope.handles().filter((handle) => handle.namespace === namespace && handle.isHeld);
    return all[all.length - 1];
  }
  const normalized = validateLockKey(key);
  const handle = scope.find(namespace, normalized, false) ?? scope.find(namespace, normalized, true);
  return handle?.isHeld ? handle : undefined;
}

/** See LockService.inheritedLock(). `key` is normalised already; `backendKind` names the backend in the error. */
export function inheritedInScope(
  namespace: string,
  backendKind: string,
  key: string,
  resolved: { readonly mode?: LockMode; readonly permits?: number },
): LockHandle | undefined {
  const scope = currentLockScope();
  // A request's own scope starts empty: no key to build then.
  if (!scope || scope.isEmpty) return undefined;
  const held = scope.find(namespace, key, resolved.permits !== undefined);
  if (!held?.isHeld) return undefined;
  if (held.mode === 'read' && resolved.mode !== 'read') {
    throw new LockNotSupportedError(
      backendKind,
      `upgrading the read lock on "${key}" to ${resolved.mode ?? 'exclusive'} within the same call chain`,
      'it would deadlock against the read lock this call chain holds. Take the write lock first.',
    );
  }
  return held;
}
