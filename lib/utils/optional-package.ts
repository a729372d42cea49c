import { MissingPackageError } from '../errors/missing-package.error';

/**
 * `require(packageName)` for an optional peer dependency, or a MissingPackageError naming `feature` (what needs
 * it) and the install command. Optional peers are loaded only when the app uses what needs them, so an app
 * using only the Redis backend never needs etcd3, and the reverse.
 *
 * Only the package itself being absent becomes a MissingPackageError: when it is installed but fails to load
 * (a missing dependency of its own, a syntax error), that error is rethrown as is, since installing it again
 * would not help.
 */
export function loadOptionalPackage<T>(packageName: string, feature: string): T {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(packageName) as T;
  } catch (error) {
    if (isNotFound(error, packageName)) throw new MissingPackageError(packageName, feature, { cause: error });
    throw error;
  }
}

/**
 * Node's "Cannot find module 'x'" for `packageName` itself, not for something it requires; or Yarn Plug'n'Play's
 * error for an optional peer the app does not provide (its code is MODULE_NOT_FOUND too, with its own message).
 */
function isNotFound(error: unknown, packageName: string): boolean {
  const found = error as (NodeJS.ErrnoException & { pnpCode?: string; data?: { dependencyName?: string } }) | undefined;
  if (found?.code !== 'MODULE_NOT_FOUND') return false;
  if (found.pnpCode === 'MISSING_PEER_DEPENDENCY') return found.data?.dependencyName === packageName;
  return String(found.message).startsWith(`Cannot find module '${packageName}'`);
}

/** Whether `packageName` can be loaded from here, without loading it. */
export function isPackageInstalled(packageName: string): boolean {
  try {
    require.resolve(packageName);
    return true;
  } catch {
    return false;
  }
}
