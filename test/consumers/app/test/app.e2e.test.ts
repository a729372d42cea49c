import 'reflect-metadata';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { AppModule } from '../src/app.module.js';

// Two instances of the app on one redis-server (REDIS_URL), as two replicas of a service would run: the first on
// Express, the second on Fastify (the 409 and Retry-After checks below go to the second).
let instances: INestApplication[] = [];
let urls: string[] = [];

async function startInstance(platform: 'express' | 'fastify'): Promise<INestApplication> {
  const app =
    platform === 'fastify'
      ? await NestFactory.create(AppModule, new FastifyAdapter(), { logger: ['error'] })
      : await NestFactory.create(AppModule, { logger: ['error'] });
  await app.listen(0, '127.0.0.1');
  return app;
}

async function send(url: string, init?: RequestInit): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(url, init);
  return { status: response.status, headers: response.headers, body: await response.json() };
}

const put = (base: string, id: string, delayMs: number) =>
  send(`${base}/files/${id}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ delayMs }),
  });

describe('nest-distributed-lock installed from its tarball', () => {
  before(async () => {
    assert.ok(process.env.REDIS_URL, 'REDIS_URL must point at a test redis-server');
    instances = [await startInstance('express'), await startInstance('fastify')];
    urls = await Promise.all(instances.map(async (app) => (await app.getUrl()).replace('[::1]', '127.0.0.1')));
  });

  after(async () => {
    await Promise.all(instances.map((app) => app.close()));
  });

  it('serialises same-id requests across two instances, each with a larger fencing token', async () => {
    const id = `doc-${Date.now()}`;
    const finished: Array<{ token: bigint; overlapped: boolean }> = [];
    await Promise.all(
      Array.from({ length: 6 }, async (_, index) => {
        const reply = await put(urls[index % 2], id, 60);
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        assert.equal(reply.body.lock.key, `file:${id}`);
        assert.match(
          reply.body.lock.fencingToken,
          /^\d+$/,
          'the handle serialises its fencing token as a decimal string',
        );
        assert.match(reply.body.storeFencingToken, /^\d+$/);
        finished.push({ token: BigInt(reply.body.lock.fencingToken), overlapped: reply.body.overlapped });
      }),
    );
    assert.deepEqual(
      finished.map((entry) => entry.overlapped),
      [false, false, false, false, false, false],
    );
    for (let index = 1; index < finished.length; index++) {
      assert.ok(finished[index].token > finished[index - 1].token, 'grants in completion order carry rising tokens');
    }
  });

  it('answers 409 with Retry-After when the key is busy and the route does not wait', async () => {
    const id = `busy-${Date.now()}`;
    const slow = put(urls[0], id, 1_500);
    // Wait until the slow write holds the lock, as seen through the injected LockService of the other instance.
    const deadline = Date.now() + 10_000;
    while (!(await send(`${urls[1]}/files/${id}/locked`)).body.locked) {
      assert.ok(Date.now() < deadline, 'the slow write never took its lock');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const busy = await send(`${urls[1]}/files/${id}/peek`);
    assert.equal(busy.status, 409, JSON.stringify(busy.body));
    assert.ok(busy.headers.get('retry-after'), 'a 409 carries Retry-After');
    assert.equal((await slow).status, 200);
    assert.equal((await send(`${urls[1]}/files/${id}/peek`)).status, 200, 'free again once the write ended');
  });

  it('injects the backend into a controller by its type (LockBackend)', async () => {
    const reply = await send(`${urls[0]}/backend`);
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { kind: 'redis' });
  });

  it('answers 400 naming the placeholder when a template value is missing', async () => {
    const reply = await send(`${urls[0]}/reports`);
    assert.equal(reply.status, 400);
    assert.match(JSON.stringify(reply.body), /tenant/);
    assert.equal((await send(`${urls[0]}/reports?tenant=acme`)).status, 200);
  });
});
