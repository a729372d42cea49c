import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { LockBackend } from './backends/lock-backend.interface';
import type { LockServiceOptions } from './lock-options';
import type { LockObservabilityOptions } from './observability/lock-observability';

/** Options of `DistributedLockModule.forRoot()` / what `forRootAsync()` factories return. */
export interface DistributedLockModuleOptions extends LockServiceOptions, LockObservabilityOptions {
  /** Where locks live. Default: a new in-process MemoryLockBackend (one process only; for development and tests). */
  backend?: LockBackend;
}

/** Implemented by a class given to `forRootAsync({ useClass })`. */
export interface DistributedLockOptionsFactory {
  createDistributedLockOptions(): DistributedLockModuleOptions | Promise<DistributedLockModuleOptions>;
}

export const {
  ConfigurableModuleClass,
  MODULE_OPTIONS_TOKEN: DISTRIBUTED_LOCK_MODULE_OPTIONS,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<DistributedLockModuleOptions>({ moduleName: 'DistributedLock' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createDistributedLockOptions')
  .setExtras({ isGlobal: false }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();
