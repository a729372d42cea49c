import { LockError } from './lock-error';

/**
 * A `@WithLock` controller's module cannot see DistributedLockModule, so its LockInterceptor has no LockService.
 * Thrown at startup when DistributedLockModule is imported somewhere else, or per call when it is imported nowhere
 * (also by a `@ScheduledLock` job that fires in an app without DistributedLockModule).
 */
export class LockModuleMissingError extends LockError {
  override readonly name = 'LockModuleMissingError';

  constructor(
    /** `Class.method`, or `Class` for a class-level `@WithLock`. */
    readonly where: string,
    /** The module that declares the controller, when known. */
    readonly moduleName?: string,
    /** The decorator that needs it: '@WithLock' or '@ScheduledLock'. */
    decorator = '@WithLock',
  ) {
    super(
      `${decorator} on ${where} has no LockService: register DistributedLockModule.forRoot(...) once with ` +
        `{ isGlobal: true }, or import into ${moduleName ?? `the module that declares ${where.split('.')[0]}`} the ` +
        `module that registers it (and exports it). Each forRoot(...) is a LockService and backend of its own.`,
    );
  }
}
