import { LockError } from '../errors/lock-error';

/** An optional peer dependency that a feature the app asked for needs is not installed. */
export class MissingPackageError extends LockError {
  override readonly name = 'MissingPackageError';

  constructor(
    readonly packageName: string,
    feature: string,
    options?: { cause?: unknown },
  ) {
    super(`${feature} needs the "${packageName}" package, which is not installed. Run: npm install ${packageName}`, options);
  }
}

/**
 * `require(packageName)`, or a MissingPackageError naming the feature. Optional peers are loaded only when the app
 * asks for the feature, so an app that never uses telemetry or health checks needs neither package.
 */
export function requireOptional<T>(packageName: string, feature: string): T {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(packageName) as T;
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException)?.code === 'MODULE_NOT_FOUND' && String((error as Error).message).includes(packageName);
    if (missing) throw new MissingPackageError(packageName, feature, { cause: error });
    throw error;
  }
}
