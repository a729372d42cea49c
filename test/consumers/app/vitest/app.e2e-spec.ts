// The app under Vitest, as a Nest 12 app made by `nest new` tests itself (`vitest run`, Vite's own TypeScript
// transform, no SWC plugin): constructor parameters are injected by the types that transform records.
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockBackend, LockService } from 'nest-distributed-lock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppModule } from '../src/app.module.js';
import { FilesService } from '../src/files.service.js';

describe('the app under Vitest', () => {
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: ['error'] });
    await app.listen(0, '127.0.0.1');
    url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  });

  afterAll(async () => {
    await app?.close();
  });

  it('injects LockService and LockBackend by their types', async () => {
    const reply = await fetch(`${url}/backend`);
    expect(await reply.json()).toEqual({ kind: 'redis' });
    expect(app.get(LockService).backend).toBe(app.get(LockBackend));
  });

  it('locks a route and a service method, with a fencing token each', async () => {
    const reply = await fetch(`${url}/files/vitest`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ delayMs: 0 }),
    });
    expect(reply.status).toBe(200);
    const body = await reply.json();
    expect(body.lock.key).toBe('file:vitest');
    expect(BigInt(body.lock.fencingToken)).toBeGreaterThan(0n);
    expect(BigInt(body.storeFencingToken)).toBeGreaterThan(0n);
  });

  it('serialises two calls of the locked service method on one id', async () => {
    const files = app.get(FilesService);
    const [first, second] = await Promise.all([files.write('same', 50), files.write('same', 50)]);
    expect([first.overlapped, second.overlapped]).toEqual([false, false]);
    expect(BigInt(second.storeFencingToken)).not.toBe(BigInt(first.storeFencingToken));
  });
});
