/**
 * The bench's own tiny Nest app for scenario 5: the same handler plain, behind a pass-through interceptor, and
 * with @WithLock (itself a Nest interceptor, so the lock's own cost is the locked route over the pass-through one).
 *
 *   LOCK_BACKEND=memory|redis  REDIS_URL=redis://127.0.0.1:<port>  PORT=<port>  ROUTE_ORDER=plain-first|locked-first
 *   node --require ./test/support/ts-register.js bench/http-app.ts
 *
 * Ids are random per request, so the locked route is uncontended: the difference is the lock's own cost.
 */
import 'reflect-metadata';
import {
  CallHandler,
  Controller,
  DynamicModule,
  ExecutionContext,
  Get,
  Injectable,
  Module,
  NestInterceptor,
  Param,
  Type,
  UseInterceptors,
} from '@nestjs/common';
import type { Observable } from 'rxjs';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { DistributedLockModule, LockBackend, MemoryLockBackend, RedisLockBackend, WithLock } from '../lib';

/** Does nothing: the cost of Nest's interceptor machinery itself, which @WithLock also runs through. */
@Injectable()
class PassThroughInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle();
  }
}

@Controller()
class PlainController {
  @Get('plain/:id')
  plain(@Param('id') id: string): { id: string } {
    return { id };
  }
}

@Controller()
class LockedController {
  @Get('locked/:id')
  @WithLock('bench:<<id>>')
  locked(@Param('id') id: string): { id: string } {
    return { id };
  }
}

@Controller()
class InterceptedController {
  @Get('intercepted/:id')
  @UseInterceptors(PassThroughInterceptor)
  intercepted(@Param('id') id: string): { id: string } {
    return { id };
  }
}

/**
 * Express tries routes in the order the controllers are listed, and each failed match costs a few % of a request
 * this small, so the route listed second pays for it. The bench runs half its pairs in an app that lists plain
 * first and half in one that lists locked first (ROUTE_ORDER), so that cost falls on both routes alike.
 */
function controllersFromEnv(): Type[] {
  const order = process.env.ROUTE_ORDER ?? 'plain-first';
  if (order === 'plain-first') return [PlainController, LockedController, InterceptedController];
  if (order === 'locked-first') return [LockedController, PlainController, InterceptedController];
  throw new Error(`ROUTE_ORDER must be plain-first or locked-first, got "${order}"`);
}

function backendFromEnv(): { backend: LockBackend; close: () => Promise<unknown> } {
  const kind = process.env.LOCK_BACKEND ?? 'memory';
  if (kind === 'memory') return { backend: new MemoryLockBackend(), close: async () => undefined };
  if (kind === 'redis') {
    const url = process.env.REDIS_URL;
    if (!url) throw new Error('LOCK_BACKEND=redis needs REDIS_URL, e.g. redis://127.0.0.1:6380');
    const client = new Redis(url);
    return { backend: new RedisLockBackend({ client }), close: () => client.quit() };
  }
  throw new Error(`LOCK_BACKEND must be memory or redis, got "${kind}"`);
}

function appModule(backend: LockBackend): DynamicModule {
  @Module({})
  class BenchAppModule {}
  return {
    module: BenchAppModule,
    imports: [
      DistributedLockModule.forRoot({
        backend,
        keyPrefix: 'bench-http',
        defaults: { ttl: 10_000, waitTimeout: 5_000 },
      }),
    ],
    controllers: controllersFromEnv(),
  };
}

async function main(): Promise<void> {
  const port = Number(process.env.PORT ?? 3000);
  const { backend, close: closeBackend } = backendFromEnv();
  const app = await NestFactory.create(appModule(backend), { logger: ['error'] });
  await app.listen(port, '127.0.0.1');
  const stop = async () => {
    await app.close();
    await closeBackend();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
  if (process.send) {
    process.on('message', (message: { type?: string }) => message?.type === 'stop' && void stop());
    process.send({ type: 'ready', port });
  } else {
    console.log(`bench http app (${process.env.LOCK_BACKEND ?? 'memory'}) on http://127.0.0.1:${port}`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
