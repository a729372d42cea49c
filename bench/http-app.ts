/**
 * The bench's own tiny Nest app for scenario 5: the same handler plain, behind a pass-through interceptor, and
 * with @WithLock (itself a Nest interceptor, so the lock's own cost is the locked route over the pass-through one);
 * on Redis also behind an interceptor that sends only a raw lock's two commands (the floor for a Redis lock).
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
  Inject,
  Injectable,
  Module,
  NestInterceptor,
  Param,
  Provider,
  Type,
  UseInterceptors,
} from '@nestjs/common';
import { from, mergeMap, type Observable } from 'rxjs';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { GCProfiler, getHeapStatistics } from 'node:v8';
import { DistributedLockModule, LockBackend, MemoryLockBackend, RedisLockBackend, WithLock } from '../lib';

/** Does nothing: the cost of Nest's interceptor machinery itself, which @WithLock also runs through. */
@Injectable()
class PassThroughInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle();
  }
}

const BENCH_REDIS = Symbol('BENCH_REDIS');

/**
 * The least a Redis lock costs the app: its two commands, `SET key 1 NX PX` before the handler and `DEL key` after,
 * on the lock backend's own ioredis client, with no owner check, fencing or renewal (not a safe lock).
 */
@Injectable()
class RawRedisInterceptor implements NestInterceptor {
  constructor(@Inject(BENCH_REDIS) private readonly client: Redis) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const key = `bench-http:raw:${context.switchToHttp().getRequest<{ params: { id: string } }>().params.id}`;
    return from(this.client.set(key, '1', 'PX', 10_000, 'NX')).pipe(
      mergeMap(() => next.handle()),
      mergeMap(async (body: unknown) => {
        await this.client.del(key);
        return body;
      }),
    );
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

@Controller()
class RawRedisController {
  @Get('raw-redis/:id')
  @UseInterceptors(RawRedisInterceptor)
  rawRedis(@Param('id') id: string): { id: string } {
    return { id };
  }
}

/**
 * Express tries routes in the order the controllers are listed, and each failed match costs a few % of a request
 * this small, so the route listed second pays for it. The bench runs half its pairs in an app that lists plain
 * first and half in one that lists locked first (ROUTE_ORDER), so that cost falls on both routes alike.
 */
function controllersFromEnv(redis: boolean): Type[] {
  const order = process.env.ROUTE_ORDER ?? 'plain-first';
  // The raw Redis route comes last in both orders, with the pass-through route (see the bench's RESULTS).
  const last = redis ? [InterceptedController, RawRedisController] : [InterceptedController];
  if (order === 'plain-first') return [PlainController, LockedController, ...last];
  if (order === 'locked-first') return [LockedController, PlainController, ...last];
  throw new Error(`ROUTE_ORDER must be plain-first or locked-first, got "${order}"`);
}

interface BenchBackend {
  readonly backend: LockBackend;
  /** The Redis client, for the raw route (Redis only). */
  readonly client?: Redis;
  close(): Promise<unknown>;
}

function backendFromEnv(): BenchBackend {
  const kind = process.env.LOCK_BACKEND ?? 'memory';
  if (kind === 'memory') return { backend: new MemoryLockBackend(), close: async () => undefined };
  if (kind === 'redis') {
    const url = process.env.REDIS_URL;
    if (!url) throw new Error('LOCK_BACKEND=redis needs REDIS_URL, e.g. redis://127.0.0.1:6380');
    const client = new Redis(url);
    return { backend: new RedisLockBackend({ client }), client, close: () => client.quit() };
  }
  throw new Error(`LOCK_BACKEND must be memory or redis, got "${kind}"`);
}

function appModule({ backend, client }: BenchBackend): DynamicModule {
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
    controllers: controllersFromEnv(client !== undefined),
    providers: client ? [{ provide: BENCH_REDIS, useValue: client } satisfies Provider, RawRedisInterceptor] : [],
  };
}

/**
 * Bytes allocated on the JS heap between start() and stop(): the growth of the used heap, plus what each
 * collection in between freed. Unlike CPU time, it does not drift with the shared machine's speed.
 */
class HeapAllocation {
  private profiler: GCProfiler | undefined;
  private usedAtStart = 0;

  start(): void {
    this.profiler?.stop();
    this.profiler = new GCProfiler();
    this.usedAtStart = getHeapStatistics().used_heap_size;
    this.profiler.start();
  }

  stop(): number {
    const collections = this.profiler?.stop()?.statistics ?? [];
    this.profiler = undefined;
    let allocated = 0;
    let usedAfterLast = this.usedAtStart;
    for (const { beforeGC, afterGC } of collections) {
      allocated += beforeGC.heapStatistics.usedHeapSize - usedAfterLast;
      usedAfterLast = afterGC.heapStatistics.usedHeapSize;
    }
    return allocated + getHeapStatistics().used_heap_size - usedAfterLast;
  }
}

async function main(): Promise<void> {
  const port = Number(process.env.PORT ?? 3000);
  const bench = backendFromEnv();
  const app = await NestFactory.create(appModule(bench), { logger: ['error'] });
  await app.listen(port, '127.0.0.1');
  const stop = async () => {
    await app.close();
    await bench.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
  if (process.send) {
    const heap = new HeapAllocation();
    let cpuAtStart = process.cpuUsage();
    process.on('message', (message: { type?: string }) => {
      if (message?.type === 'stop') void stop();
      else if (message?.type === 'window-start') {
        heap.start();
        cpuAtStart = process.cpuUsage();
        process.send!({ type: 'window-started' });
      } else if (message?.type === 'window-stop') {
        // Microseconds from getrusage: /proc's 10 ms ticks were 5-8 µs per request of a paced run.
        const cpu = process.cpuUsage(cpuAtStart);
        process.send!({ type: 'window', heapBytes: heap.stop(), cpuMicros: cpu.user + cpu.system });
      }
    });
    process.send({ type: 'ready', port });
  } else {
    console.log(`bench http app (${process.env.LOCK_BACKEND ?? 'memory'}) on http://127.0.0.1:${port}`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
