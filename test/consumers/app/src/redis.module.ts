import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';

/** The app's own Redis client; the lock backend borrows it and never closes it, so the app does. */
@Module({
  providers: [{ provide: Redis, useFactory: () => new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379') }],
  exports: [Redis],
})
export class RedisModule implements OnApplicationShutdown {
  constructor(@Inject(Redis) private readonly redis: Redis) {}

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit();
  }
}
