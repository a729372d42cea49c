import { DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { LockBackend } from './backends/lock-backend.interface';
import { MemoryLockBackend } from './backends/memory/memory-lock.backend';
import {
  checkModuleOptions,
  ConfigurableModuleClass,
  DISTRIBUTED_LOCK_MODULE_OPTIONS,
  type DistributedLockModuleAsyncOptions,
  DistributedLockModuleOptions,
  type DistributedLockModuleRootOptions,
} from './distributed-lock.module-definition';
import { LockExplorer } from './explorer/lock.explorer';
import { LockMetadataAccessor } from './explorer/lock-metadata.accessor';
import { LockService } from './lock.service';
import { LockHealthIndicator } from './health/lock-health.indicator';
import { LockObservability } from './observability/lock-observability';
import { LeaderElection } from './leader-election/leader-election.service';
import { LeaderHealthIndicator } from './health/leader-health.indicator';
import { LeaderExplorer } from './leader-election/leader.explorer';
import { ScheduledLockExplorer } from './schedule/scheduled-lock.explorer';

/**
 * Provides LockService and the backend (token `LockBackend`, an abstract class, so a parameter of that type is
 * injected), locks `@WithLock` provider methods and sets up `@ScheduledLock` jobs.
 * LockService releases every lock it still holds, then closes what the backend created, on application
 * shutdown (`app.close()`, or a signal with `app.enableShutdownHooks()`); a client you passed in stays open.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: LockBackend,
      useFactory: (options: DistributedLockModuleOptions) => {
        checkModuleOptions(options);
        return options.backend ?? new MemoryLockBackend();
      },
      inject: [DISTRIBUTED_LOCK_MODULE_OPTIONS],
    },
    {
      provide: LockService,
      useFactory: (
        backend: LockBackend,
        {
          backend: _given,
          telemetry: _telemetry,
          logging: _logging,
          elections: _elections,
          ...options
        }: DistributedLockModuleOptions,
      ) => new LockService(backend, options),
      inject: [LockBackend, DISTRIBUTED_LOCK_MODULE_OPTIONS],
    },
    LockMetadataAccessor,
    LockExplorer,
    ScheduledLockExplorer,
    LockObservability,
    LockHealthIndicator,
    {
      provide: LeaderElection,
      useFactory: (locks: LockService, { elections, operationTimeout }: DistributedLockModuleOptions) =>
        new LeaderElection(locks, { ...elections, operationTimeout: elections?.operationTimeout ?? operationTimeout }),
      inject: [LockService, DISTRIBUTED_LOCK_MODULE_OPTIONS],
    },
    LeaderHealthIndicator,
    LeaderExplorer,
  ],
  exports: [LockService, LockBackend, LockHealthIndicator, LeaderElection, LeaderHealthIndicator],
})
export class DistributedLockModule extends ConfigurableModuleClass {
  /** `forRoot(new RedisLockBackend({ client }))`, or `forRoot({ backend, keyPrefix, defaults, isGlobal })`. */
  static override forRoot(backendOrOptions: LockBackend | DistributedLockModuleRootOptions = {}): DynamicModule {
    return super.forRoot(isLockBackend(backendOrOptions) ? { backend: backendOrOptions } : backendOrOptions);
  }

  /** Options from a factory: `useFactory` (with `inject` and `imports`), `useClass` or `useExisting`. */
  static override forRootAsync(options: DistributedLockModuleAsyncOptions): DynamicModule {
    if (!options?.useFactory && !options?.useClass && !options?.useExisting) {
      throw new TypeError(
        'DistributedLockModule.forRootAsync() needs useFactory (with inject), useClass or useExisting, e.g. ' +
          "forRootAsync({ imports: [ConfigModule], inject: [ConfigService], useFactory: (config) => ({ keyPrefix: config.get('LOCK_PREFIX') }) }).",
      );
    }
    return super.forRootAsync(options);
  }
}

function isLockBackend(value: unknown): value is LockBackend {
  const candidate = value as Partial<LockBackend> | null;
  return typeof candidate?.acquire === 'function' && typeof candidate.tryAcquire === 'function';
}
