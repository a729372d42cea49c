import { Module } from '@nestjs/common';
import { Redis } from 'ioredis';
import { DistributedLockModule, RedisLockBackend } from 'nest-distributed-lock';
import { FilesController } from './files.controller.js';
import { FilesService } from './files.service.js';
import { RedisModule } from './redis.module.js';

@Module({
  imports: [
    DistributedLockModule.forRootAsync({
      isGlobal: true,
      imports: [RedisModule],
      inject: [Redis],
      useFactory: (redis: Redis) => ({
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
