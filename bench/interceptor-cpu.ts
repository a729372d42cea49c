/**
 * LockInterceptor.intercept alone, outside Nest and HTTP, on the memory backend (or Redis): CPU µs per call against
 * a pass-through interceptor, in alternating rounds in one process (the machine's speed drifts between minutes).
 *
 *   [REDIS_URL=redis://127.0.0.1:<port>] [LOCK_LIB=<dir>/lib] node --require ./test/support/ts-register.js bench/interceptor-cpu.ts [calls per round] [rounds]
 *
 * A profiling aid for the interceptor's own cost (scenario 5 measures the whole app); add --cpu-prof to profile.
 * To compare with another copy of lib/ (`git archive <commit> lib | tar -x -C <dir>`), run it with LOCK_LIB=<dir>/lib,
 * alternating with runs of this one, each in its own process: within one process both would share a heap, and
 * collect each other's garbage, which hides a difference in what survives a collection.
 */
import 'reflect-metadata';
import { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import Redis from 'ioredis';
import { from, mergeMap, Observable } from 'rxjs';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the copy of lib/ to measure is chosen at run time
const lib = (process.env.LOCK_LIB ? require(process.env.LOCK_LIB) : require('../lib')) as typeof import('../lib');
const { LockInterceptor, LockService, MemoryLockBackend, RedisLockBackend, WithLock } = lib;

class Target {
  @WithLock('bench:<<id>>')
  locked(): void {}
}

const passThrough: NestInterceptor = { intercept: (_context, next) => next.handle() };

/** What Nest's ExecutionContextHost offers that the interceptor reads, for one request. */
function contextFor(id: string): ExecutionContext {
  const args = [{ params: { id }, headers: {} }, { writableFinished: false, once: () => undefined }, undefined];
  return {
    // eslint-disable-next-line @typescript-eslint/unbound-method -- the handler as a value, as Nest's getHandler() gives it
    getHandler: () => Target.prototype.locked,
    getClass: () => Target,
    getType: () => 'http',
    getArgs: () => args,
    getArgByIndex: (index: number) => args[index],
    switchToHttp: () => ({ getRequest: () => args[0], getResponse: () => args[1], getNext: () => args[2] }),
    switchToRpc: () => {
      throw new Error('http only');
    },
    switchToWs: () => {
      throw new Error('http only');
    },
  } as unknown as ExecutionContext;
}

const handler: CallHandler = {
  handle: () =>
    new Observable((subscriber) => {
      subscriber.next({ ok: true });
      subscriber.complete();
    }),
};

/** `calls` calls, `inFlight` at a time (as autocannon's connections), each to completion. */
async function round(interceptor: NestInterceptor, calls: number, inFlight: number): Promise<number> {
  let next = 0;
  const start = process.cpuUsage();
  const lane = async () => {
    while (next < calls) {
      const id = String(next++);
      await new Promise<void>((resolve, reject) =>
        (interceptor.intercept(contextFor(id), handler) as Observable<unknown>).subscribe({
          complete: resolve,
          error: reject,
        }),
      );
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const used = process.cpuUsage(start);
  return (used.user + used.system) / calls;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** On Redis, the floor for any Redis lock: `SET key 1 NX PX` before the handler and `DEL key` after (as bench/http-app.ts). */
function rawRedisInterceptor(client: Redis): NestInterceptor {
  return {
    intercept: (context, next) => {
      const key = `bench-cpu:raw:${context.switchToHttp().getRequest<{ params: { id: string } }>().params.id}`;
      return from(client.set(key, '1', 'PX', 10_000, 'NX')).pipe(
        mergeMap(() => next.handle()),
        mergeMap(async (body: unknown) => {
          await client.del(key);
          return body;
        }),
      );
    },
  };
}

async function main(): Promise<void> {
  const calls = Number(process.argv[2] ?? 20_000);
  const rounds = Number(process.argv[3] ?? 10);
  const url = process.env.REDIS_URL;
  const client = url ? new Redis(url) : undefined;
  const backend = client ? new RedisLockBackend({ client }) : new MemoryLockBackend();
  const service = new LockService(backend, { defaults: { ttl: 10_000, waitTimeout: 5_000 } });
  const variants: [string, NestInterceptor][] = [
    ['pass-through', passThrough],
    ['@WithLock', new LockInterceptor(service, new Reflector())],
  ];
  if (client) variants.push(['raw SET NX PX + DEL', rawRedisInterceptor(client)]);
  // Warm all up; the locked ones turn AsyncLocalStorage's promise hooks on, for every variant from then on.
  for (const [, interceptor] of variants) await round(interceptor, calls, 16);
  const costs = variants.map(() => [] as number[]);
  for (let index = 0; index < rounds; index++) {
    // Rotate the order, so no variant always runs after the same one (and collects its garbage).
    for (let step = 0; step < variants.length; step++) {
      const which = (index + step) % variants.length;
      costs[which].push(await round(variants[which][1], calls, 16));
    }
  }
  await service.close();
  await client?.quit();
  const show = (values: number[]) =>
    `${median(values).toFixed(2)} (${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)})`;
  console.log(`CPU µs per call, median (range) over ${rounds} rounds of ${calls} calls, 16 in flight:`);
  for (const [index, [name]] of variants.entries()) {
    const over = costs[index].map((cost, round) => cost - costs[0][round]);
    console.log(`  ${name.padEnd(22)} ${show(costs[index])}${index > 0 ? `   over pass-through ${show(over)}` : ''}`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
