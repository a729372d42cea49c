import { Module } from '@nestjs/common';
import { DistributedLockModule, RedisLockBackend, type RedisLockClient } from 'nest-distributed-lock';
import { FilesController } from './files.controller.js';
import { FilesService } from './files.service.js';
import { REDIS_CLIENT, RedisModule } from './redis.module.js';

@Module({
  imports: [
    DistributedLockModule.forRootAsync({
      isGlobal: true,
      imports: [RedisModule],
      inject: [REDIS_CLIENT],
      useFactory: (redis: RedisLockClient) => ({
        backend: new RedisLockBackend({ client: redis }),
        keyPrefix: 'consumer',
        defaults: { ttl: 5_000, waitTimeout: 10_000 },
      }),
    }),
  ],
  controllers: [FilesController],
  providers: [FilesService],
})
export class AppModule {}
