import {
  type CanActivate,
  Controller,
  type DynamicModule,
  Module,
  type ModuleMetadata,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { HeldLocksTracker } from './held-locks.tracker';
import { LockAdminController } from './lock-admin.controller';
import { checkOptionNames, optionNames } from '../utils/validate';

export interface LockAdminModuleOptions {
  /** Route prefix. Default 'locks': `GET /locks` and `GET /locks/:key`. */
  path?: string;
  /** Guards run before every admin route. Required unless `unguarded` is set. */
  guards?: (Type<CanActivate> | CanActivate)[];
  /** Modules the guards need, and DistributedLockModule when it is not registered with `isGlobal: true`. */
  imports?: ModuleMetadata['imports'];
  /** Mount without guards, e.g. on an internal port that only operators reach. Default false. */
  unguarded?: boolean;
}

const ADMIN_OPTIONS = optionNames<LockAdminModuleOptions>({ path: true, guards: true, imports: true, unguarded: true });

/**
 * Opt-in HTTP inspector for locks:
 *
 * ```ts
 * DistributedLockAdminModule.register({ path: 'admin/locks', guards: [AdminGuard] })
 * ```
 *
 * It refuses to mount without a guard unless `unguarded: true` says so on purpose.
 */
@Module({})
export class DistributedLockAdminModule {
  static register(options: LockAdminModuleOptions = {}): DynamicModule {
    checkOptionNames(
      options,
      ADMIN_OPTIONS,
      'DistributedLockAdminModule.register() options',
      '{ guards: [AdminGuard] }',
    );
    const guards = options.guards ?? [];
    if (guards.length === 0 && !options.unguarded) {
      throw new TypeError(
        'DistributedLockAdminModule.register() needs guards: the inspector shows which keys are locked and by whom. ' +
          'Pass { guards: [YourAdminGuard] }, or { unguarded: true } when only operators can reach the app.',
      );
    }
    return {
      module: DistributedLockAdminModule,
      imports: options.imports ?? [],
      controllers: [adminControllerAt(options.path ?? 'locks', guards)],
      providers: [HeldLocksTracker],
    };
  }
}

/** A subclass per registration, so the path and guards of one registration never leak into another. */
function adminControllerAt(path: string, guards: (Type<CanActivate> | CanActivate)[]): Type<LockAdminController> {
  class ConfiguredLockAdminController extends LockAdminController {}
  Controller(path)(ConfiguredLockAdminController);
  if (guards.length > 0) UseGuards(...guards)(ConfiguredLockAdminController);
  return ConfiguredLockAdminController;
}
