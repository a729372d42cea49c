import { Body, Controller, Get, INestApplication, Param, Post, Put, Query } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import fc from 'fast-check';
import request from 'supertest';
import type { AcquireRequest, LockGrant } from '../../lib/backends/lock-backend.interface';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { WithLock } from '../../lib/decorators/with-lock.decorator';
import { DistributedLockModule } from '../../lib/distributed-lock.module';
import type { LockHandle } from '../../lib/lock-handle';
import { LockService } from '../../lib/lock.service';
import { RecordingBackend } from '../support/recording-backend';

/** Remembers every key the interceptor asked the backend for. */
class KeyRecordingBackend extends RecordingBackend {
  readonly requested: string[] = [];

  override tryAcquire(request: AcquireRequest): Promise<LockGrant | null> {
    this.requested.push(request.key);
    return super.tryAcquire(request);
  }

  override acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    this.requested.push(request.key);
    return super.acquire(request, signal);
  }
}

@Controller('docs')
class DocsController {
  @Put(':id')
  @WithLock('doc:<<id>>', { waitTimeout: 0 })
  put(@Param('id') id: string) {
    return { id };
  }

  @Post('by-body')
  @WithLock('tenant:<<body.tenant>>:doc:<<body.doc>>', { waitTimeout: 0 })
  byBody(@Body() body: unknown) {
    return body;
  }

  @Get('search')
  @WithLock('search:<<query.q>>', { waitTimeout: 0 })
  search(@Query('q') q: unknown) {
    return { q };
  }
}

/**
 * Template injection through @WithLock: values from the request (route params, body, query) that contain key
 * separators, wildcards, braces, escapes or template syntax stay data. They can never address another key:
 * only the exact values that render a held key are refused, and values that are not one scalar are rejected.
 */
describe('@WithLock key templates with hostile request values', () => {
  let app: INestApplication;
  let locks: LockService;
  let backend: KeyRecordingBackend;
  const held: LockHandle[] = [];

  beforeAll(async () => {
    backend = new KeyRecordingBackend(new MemoryLockBackend());
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend, keyPrefix: 'inject', defaults: { ttl: 30_000 } })],
      controllers: [DocsController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    locks = app.get(LockService);
    // The keys an attacker would like to reach.
    for (const key of [
      'doc:1',
      'doc:1:x',
      'doc:1/2',
      'doc:*',
      'doc:<<id>>',
      'tenant:a:doc:b',
      'tenant:a:doc:b:doc:c',
      'search:x',
    ]) {
      held.push(await locks.acquire(key));
    }
  });

  afterAll(async () => {
    await Promise.all(held.map((lock) => lock.release()));
    await app?.close();
  });

  it('maps a plain value onto its key (the held key is refused with 409)', async () => {
    await request(app.getHttpServer()).put('/docs/1').expect(409);
    await request(app.getHttpServer()).post('/docs/by-body').send({ tenant: 'a', doc: 'b' }).expect(409);
    await request(app.getHttpServer()).get('/docs/search').query({ q: 'x' }).expect(409);
  });

  it.each([
    ['1:x', 'doc:1:x'],
    ['1/2', 'doc:1/2'],
    ['*', 'doc:*'],
    ['<<id>>', 'doc:<<id>>'],
  ])('route param %j cannot reach the held key %j', async (value) => {
    const before = backend.requested.length;
    await request(app.getHttpServer())
      .put(`/docs/${encodeURIComponent(value)}`)
      .expect(200, { id: value });
    const [key] = backend.requested.slice(before);
    expect(key.startsWith('doc:')).toBe(true);
    expect(key.slice('doc:'.length)).toMatch(/^[A-Za-z0-9_.~%-]+$/);
  });

  it.each([
    [{ tenant: 'a:doc:b', doc: 'c' }],
    [{ tenant: 'a', doc: 'b:doc:c' }],
    [{ tenant: 'a:doc', doc: 'b' }],
    [{ tenant: '<<body.tenant>>', doc: 'b' }],
    [{ tenant: 'a', doc: 'c', extra: 'tenant:a:doc:b' }],
  ])('body %j cannot reach a held key', async (body) => {
    await request(app.getHttpServer()).post('/docs/by-body').send(body).expect(201);
  });

  it.each([
    ['an object', { tenant: { toString: 'a' }, doc: 'b' }],
    ['an array', { tenant: ['a'], doc: 'b' }],
    ['null', { tenant: null, doc: 'b' }],
    ['an empty string', { tenant: '', doc: 'b' }],
    ['a missing value', { doc: 'b' }],
  ])('a value that is %s is rejected with 400, naming the placeholder', async (_label, body) => {
    const response = await request(app.getHttpServer()).post('/docs/by-body').send(body).expect(400);
    expect(response.body.message).toContain('<<body.tenant>>');
  });

  it('a repeated query parameter (an array) is rejected with 400, not joined into a key', async () => {
    await request(app.getHttpServer()).get('/docs/search?q=x&q=y').expect(400);
  });

  it('for any values, only exactly ("a", "b") reaches tenant:a:doc:b, and distinct values give distinct keys', async () => {
    const value = fc.oneof(
      fc.constantFrom(
        'a',
        'b',
        'a:doc',
        'b:doc:c',
        ':',
        '::',
        '%3A',
        '%',
        '<<body.doc>>',
        '{a}',
        'a/b',
        '*',
        'a\u0000',
        'e\u0301',
        '\u00e9',
      ),
      fc.string({ minLength: 1, maxLength: 8, unit: 'grapheme' }),
    );
    const seen = new Map<string, string>();
    await fc.assert(
      fc.asyncProperty(value, value, async (tenant, doc) => {
        const before = backend.requested.length;
        const response = await request(app.getHttpServer()).post('/docs/by-body').send({ tenant, doc });
        const targetsHeld = tenant.normalize('NFC') === 'a' && doc.normalize('NFC') === 'b';
        expect({ tenant, doc, status: response.status }).toEqual({ tenant, doc, status: targetsHeld ? 409 : 201 });
        const key = backend.requested[before];
        const pair = JSON.stringify([tenant.normalize('NFC'), doc.normalize('NFC')]);
        const earlier = seen.get(key);
        expect(earlier === undefined || earlier === pair).toBe(true);
        seen.set(key, pair);
      }),
      { numRuns: 150 },
    );
  }, 60_000);
});
