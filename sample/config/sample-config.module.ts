import { Global, Module } from '@nestjs/common';
import { readSampleConfig, SAMPLE_CONFIG } from './sample-config';

/** Stands in for @nestjs/config's ConfigModule, to show DistributedLockModule.forRootAsync with inject. */
@Global()
@Module({
  providers: [{ provide: SAMPLE_CONFIG, useFactory: () => readSampleConfig() }],
  exports: [SAMPLE_CONFIG],
})
export class SampleConfigModule {}
