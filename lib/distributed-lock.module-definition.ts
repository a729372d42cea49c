import { ConfigurableModuleBuilder, Type } from '@nestjs/common';
import { designateLockInterceptor, LockInterceptor } from './interceptors/lock.interceptor';
import { LockService } from './lock.service';
import type { LockBackend } from './backends/lock-backend.interface';
import type { LockServiceOptions } from './lock-options';
import type { LockObservabilityOptions } from './observability/lock-observability.options';
import type { LeaderElectionOptions } from './leader-election/leader-election.options';
import { checkOptionNames, optionNames } from './utils/validate';

/** Options of `DistributedLockModule.forRoot()` / what `forRootAsync()` factories return. */
export interface DistributedLockModuleOptions extends LockServiceOptions, LockObservabilityOptions {
  /** Where locks live. Default: a new in-process MemoryLockBackend (one process only; for development and tests). */
  backend?: LockBackend;
  /** LeaderElection's keyPrefix and ttl. */
  elections?: LeaderElectionOptions;
}

/** Options of `forRoot()` and `forRootAsync()` that shape the module itself, so they cannot come from a factory. */
export interface DistributedLockModuleExtras {
  /** Registers the module globally: LockService and @WithLock work in every module without importing this one. */
  isGlobal?: boolean;
  /** A subclass of LockInterceptor that changes how @WithLock resolves keys or answers lock failures. */
  lockInterceptor?: Type<LockInterceptor>;
}

/** Implemented by a class given to `forRootAsync({ useClass })`. */
export interface DistributedLockOptionsFactory {
  createDistributedLockOptions(): DistributedLockModuleOptions | Promise<DistributedLockModuleOptions>;
}

/** The LockInterceptor class forRoot was given, before it is designated (see the providers below). */
const CONFIGURED_LOCK_INTERCEPTOR = Symbol('DISTRIBUTED_LOCK:CONFIGURED_INTERCEPTOR');

export const {
  ConfigurableModuleClass,
  MODULE_OPTIONS_TOKEN: DISTRIBUTED_LOCK_MODULE_OPTIONS,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<DistributedLockModuleOptions>({ moduleName: 'DistributedLock' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createDistributedLockOptions')
  // Every extra is named here, so that Nest keeps them all out of the options it provides (see checkModuleOptions).
  .setExtras<DistributedLockModuleExtras>({ isGlobal: false, lockInterceptor: undefined }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
    // Provided here rather than in @Module so that a subclass can take its place. Nest also makes a LockInterceptor
    // in each module that uses @WithLock; those hand every call to this one (designateLockInterceptor).
    providers: [
      ...(definition.providers ?? []),
      { provide: CONFIGURED_LOCK_INTERCEPTOR, useClass: extras.lockInterceptor ?? LockInterceptor },
      {
        provide: LockInterceptor,
        useFactory: designateLockInterceptor,
        inject: [LockService, CONFIGURED_LOCK_INTERCEPTOR],
      },
    ],
    exports: [...(definition.exports ?? []), LockInterceptor],
  }))
  .build();

/** What `DistributedLockModule.forRoot()` takes: the module options plus `isGlobal` and `lockInterceptor`. */
export type DistributedLockModuleRootOptions = typeof OPTIONS_TYPE;
/** What `DistributedLockModule.forRootAsync()` takes: `useFactory` / `useClass` / `useExisting`, `imports`, `inject`. */
export type DistributedLockModuleAsyncOptions = typeof ASYNC_OPTIONS_TYPE;

const MODULE_OPTIONS = optionNames<DistributedLockModuleOptions>({
  keyPrefix: true,
  defaults: true,
  operationTimeout: true,
  instanceId: true,
  backend: true,
  elections: true,
  telemetry: true,
  logging: true,
});
const EXTRAS = optionNames<DistributedLockModuleExtras>({ isGlobal: true, lockInterceptor: true });

/**
 * At startup: refuses an option name the module does not know, and names the fix for `isGlobal` or
 * `lockInterceptor` returned by a forRootAsync factory, where they would be ignored (they shape the module before
 * any factory runs). forRoot's own extras never get here: Nest keeps them out of the options it provides.
 */
export function checkModuleOptions(options: DistributedLockModuleOptions): void {
  for (const name of Object.keys(options ?? {})) {
    if (EXTRAS.has(name)) {
      throw new TypeError(
        `DistributedLockModule: "${name}" came from the forRootAsync factory, where it has no effect. ` +
          `Pass it beside the factory: forRootAsync({ ${name}: …, useFactory, inject }).`,
      );
    }
  }
  checkOptionNames(options, MODULE_OPTIONS, 'DistributedLockModule options', "{ backend, keyPrefix: 'locks' }");
}
