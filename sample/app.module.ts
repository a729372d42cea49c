import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { DistributedLockModule } from '../lib';
import { AccountsModule } from './accounts/accounts.module';
import { createLockBackend } from './config/lock-backend.factory';
import { SAMPLE_CONFIG, SampleConfig } from './config/sample-config';
import { SampleConfigModule } from './config/sample-config.module';
import { FilesModule } from './files/files.module';
import { HomeModule } from './home/home.module';
import { LeaderModule } from './leader/leader.module';
import { OpsModule } from './ops/ops.module';
import { StaleWriteFilter } from './storage/stale-write.filter';

@Module({
  imports: [
    SampleConfigModule,
    DistributedLockModule.forRootAsync({
      isGlobal: true,
      inject: [SAMPLE_CONFIG],
      useFactory: (config: SampleConfig) => ({
        backend: createLockBackend(config),
        keyPrefix: 'sample',
        defaults: { ttl: config.lockTtlMs, waitTimeout: 10_000 },
      }),
    }),
    HomeModule,
    FilesModule,
    AccountsModule,
    OpsModule,
    LeaderModule,
  ],
  providers: [{ provide: APP_FILTER, useClass: StaleWriteFilter }],
})
export class AppModule {}
