import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
// ioredis before 5.2.5 exports the client class as the module's default only (no named `Redis`).
import Redis from 'ioredis';
import type { RedisLockClient } from 'nest-distributed-lock';

/** A real client fits the lock backend's client type, without a cast. */
export const asLockClient = (redis: Redis): RedisLockClient => redis;

/** The DI token of the app's own Redis client. */
export const REDIS_CLIENT = Symbol('REDIS_CLIENT');

/** The app's own ioredis client; the lock backend borrows it and never closes it, so the app does. */
@Module({
  providers: [
    { provide: REDIS_CLIENT, useFactory: () => new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379') },
  ],
  exports: [REDIS_CLIENT],
})
export class RedisModule implements OnApplicationShutdown {
  constructor(@Inject(REDIS_CLIENT) private readonly redis: Redis) {}

  async onApplicationShutdown(): Promise<void> {
    // A quit() while the server is down would wait behind ioredis' offline queue and leave it reconnecting.
    if (this.redis.status === 'ready') await this.redis.quit();
    this.redis.disconnect();
  }
}
