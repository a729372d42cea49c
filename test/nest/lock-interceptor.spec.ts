/* eslint-disable @typescript-eslint/unbound-method -- methods are read here as values (metadata, parameter names), never called unbound */
import {
  ArgumentsHost,
  Body,
  Catch,
  Controller,
  ExceptionFilter,
  HttpException,
  HttpServer,
  Get,
  Injectable,
  INestApplication,
  MessageEvent,
  Param,
  Post,
  Put,
  Sse,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { finalize, firstValueFrom, interval, map, Observable, of, take } from 'rxjs';
import request from 'supertest';
import { createHttpApp, HTTP_PLATFORMS, ready } from './support/http-adapters';
import type { AcquireRequest, LockGrant } from '../../lib/backends/lock-backend.interface';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { DistributedLockModule } from '../../lib/distributed-lock.module';
import { CurrentLock } from '../../lib/decorators/current-lock.decorator';
import { WithLock } from '../../lib/decorators/with-lock.decorator';
import { LockTimeoutError } from '../../lib/errors';
import { LockInterceptor } from '../../lib/interceptors/lock.interceptor';
import { describeLockError } from '../../lib/interceptors/lock-error-response';
import { InvalidKeyTemplateError } from '../../lib/errors';
import { LockHandle } from '../../lib/lock-handle';
import { LockService } from '../../lib/lock.service';
import { RecordingBackend } from '../support/recording-backend';
import { deferred, eventually, Gates } from './support/gates';
import { TypedContext } from './support/typed-context';

/** Remembers the order in which keys were requested from the server. */
class OrderRecordingBackend extends RecordingBackend {
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

const describeHandle = (lock: LockHandle) => ({ key: lock.key, fencingToken: String(lock.fencingToken) });

@Injectable()
class DocumentService {
  constructor(private readonly locks: LockService) {}

  /** Locked on the same key as the controller that calls it: must reuse the request's lock. */
  @WithLock('file:<<0>>', { waitTimeout: 0 })
  async touch(id: string): Promise<{ fencingToken: string; sameHandle: boolean }> {
    const inner = this.locks.current(`file:${id}`)!;
    return { fencingToken: String(inner.fencingToken), sameHandle: inner === this.locks.current() };
  }
}

@Controller('files')
class FilesController {
  constructor(
    private readonly locks: LockService,
    private readonly gates: Gates,
    private readonly documents: DocumentService,
  ) {}

  @Put(':id')
  @WithLock('file:<<id>>', { waitTimeout: 0 })
  async write(@Param('id') id: string, @CurrentLock() lock: LockHandle) {
    await this.gates.pass(`write:${id}`);
    return { ...describeHandle(lock), current: this.locks.current(`file:${id}`) === lock, held: lock.isHeld };
  }

  @Put(':id/queued')
  @WithLock('file:<<id>>', { waitTimeout: 5_000 })
  async queued(@Param('id') id: string, @Body() body: { name: string }) {
    await this.gates.pass(`queued:${body.name}`);
    return { name: body.name };
  }

  @Post('by-body')
  @WithLock('file:<<body.id>>')
  byBody(@Body() body: { id: unknown }) {
    return { id: body.id };
  }

  @Put(':id/nested')
  @WithLock('file:<<id>>', { waitTimeout: 0 })
  async nested(@Param('id') id: string, @CurrentLock() lock: LockHandle) {
    const inner = await this.documents.touch(id);
    await this.gates.pass(`nested:${id}`);
    return { outer: String(lock.fencingToken), inner, stillHeld: lock.isHeld };
  }

  @Put(':id/lose')
  @WithLock('file:<<id>>', { ttl: 1_000, renewInterval: 50 })
  async lose(@Param('id') id: string, @CurrentLock() lock: LockHandle) {
    this.lastLock = lock;
    await this.gates.pass(`lose:${id}`);
    return { finished: true };
  }

  lastLock?: LockHandle;

  @Get(':id/later')
  @WithLock('file:<<id>>')
  later(@Param('id') id: string): Observable<{ id: string }> {
    return new Observable((subscriber) => {
      void this.gates.pass(`later:${id}`).then(() => {
        subscriber.next({ id });
        subscriber.complete();
      });
    });
  }

  @Sse(':id/ticks')
  @WithLock('file:<<id>>')
  ticks(@Param('id') id: string): Observable<MessageEvent> {
    return interval(20).pipe(
      map((tick) => ({ data: { tick } })),
      finalize(() => void this.gates.pass(`ticks-ended:${id}`)),
    );
  }

  @Sse(':id/renewals')
  @WithLock('file:<<id>>', { ttl: 1_500, renewInterval: 100 })
  renewals(@CurrentLock() lock: LockHandle): Observable<MessageEvent> {
    return lock.renewals$.pipe(
      take(3),
      map((renewal) => ({
        type: renewal.type,
        data: { fencingToken: String(renewal.fencingToken), held: lock.isHeld },
      })),
    );
  }

  @Get(':id/computed')
  @WithLock((context) => `computed:${context.switchToHttp().getRequest().params.id}`)
  computed(@CurrentLock() lock: LockHandle) {
    return describeHandle(lock);
  }
}

@Controller('accounts')
class AccountsController {
  constructor(private readonly gates: Gates) {}

  @Post('transfer')
  @WithLock(['account:<<to>>', 'account:<<from>>'], { waitTimeout: 0 })
  async transfer(@CurrentLock() locks: ReadonlyMap<string, LockHandle>, @Body() body: { gate?: string }) {
    if (body.gate) await this.gates.pass(body.gate);
    return { keys: [...locks.keys()] };
  }
}

@Controller('docs')
@WithLock('doc:<<id>>', { waitTimeout: 0 })
class DocsController {
  constructor(private readonly gates: Gates) {}

  @Get(':id')
  async read(@Param('id') id: string, @CurrentLock() lock: LockHandle) {
    await this.gates.pass(`doc:${id}`);
    return describeHandle(lock);
  }

  @Get(':id/override')
  @WithLock('doc-override:<<id>>')
  overridden(@CurrentLock() lock: LockHandle) {
    return describeHandle(lock);
  }
}

describe.each(HTTP_PLATFORMS)('LockInterceptor over HTTP (memory backend, %s)', (platform) => {
  let app: INestApplication;
  let base: string;
  let gates: Gates;
  let backend: OrderRecordingBackend;
  let locks: LockService;

  beforeEach(async () => {
    gates = new Gates();
    backend = new OrderRecordingBackend(new MemoryLockBackend());
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend, defaults: { ttl: 5_000, waitTimeout: 5_000 } })],
      controllers: [FilesController, AccountsController, DocsController],
      providers: [DocumentService, { provide: Gates, useValue: gates }],
    }).compile();
    app = createHttpApp(moduleRef, platform, { logger: false });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    locks = app.get(LockService);
  });

  afterEach(async () => {
    gates.openAll();
    await app.close();
  });

  it('runs the handler holding the lock, exposes it via @CurrentLock and LockService.current, and frees it before responding', async () => {
    const pending = request(base)
      .put('/files/1')
      .then((response) => response);
    await gates.entered('write:1');
    expect(await locks.isLocked('file:1')).toBe(true);
    gates.open('write:1');
    const response = await pending;
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ key: 'file:1', current: true, held: true });
    expect(await locks.isLocked('file:1')).toBe(false);
  });

  it('answers 409 with the key and Retry-After when the key is busy and waitTimeout is 0', async () => {
    const first = request(base)
      .put('/files/2')
      .then((response) => response);
    await gates.entered('write:2');
    const second = await request(base).put('/files/2');
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ statusCode: 409, error: 'Conflict', key: 'file:2' });
    expect(second.headers['retry-after']).toBe('1');
    gates.open('write:2');
    expect((await first).status).toBe(200);
  });

  it("lets an app's own exception filter describe a @WithLock failure with describeLockError", async () => {
    const seen: unknown[] = [];
    @Catch()
    class LockErrorsFilter implements ExceptionFilter {
      constructor(private readonly http: HttpServer) {}

      catch(exception: unknown, host: ArgumentsHost): void {
        seen.push(exception);
        const body = describeLockError(exception);
        this.http.reply(host.switchToHttp().getResponse(), { mine: true, ...body }, body ? 499 : 500);
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend, defaults: { ttl: 5_000, waitTimeout: 5_000 } })],
      controllers: [FilesController],
      providers: [DocumentService, { provide: Gates, useValue: gates }],
    }).compile();
    const filtered = createHttpApp(moduleRef, platform, { logger: false });
    filtered.useGlobalFilters(new LockErrorsFilter(filtered.getHttpAdapter()));
    await filtered.init();
    await ready(filtered);
    let second: request.Response;
    try {
      const first = request(filtered.getHttpServer())
        .put('/files/filtered')
        .then((response) => response);
      await gates.entered('write:filtered');
      second = await request(filtered.getHttpServer()).put('/files/filtered');
      gates.open('write:filtered');
      expect((await first).status).toBe(200);
    } finally {
      await filtered.close();
    }
    // The filter gets the HttpException @WithLock threw; describeLockError reads the LockTimeoutError behind it.
    expect(seen[0]).toBeInstanceOf(HttpException);
    expect(second.status).toBe(499);
    expect(second.body).toEqual({
      mine: true,
      statusCode: 409,
      error: 'Conflict',
      message: 'The resource is locked by another request: "file:filtered".',
      code: 'LockTimeoutError',
      key: 'file:filtered',
    });
    expect(describeLockError(new HttpException('plain', 418))).toBeUndefined();
  });

  it('serialises requests on the same key and lets other keys run in parallel', async () => {
    const a = request(base)
      .put('/files/3/queued')
      .send({ name: 'a' })
      .then((response) => response);
    await gates.entered('queued:a');
    const b = request(base)
      .put('/files/3/queued')
      .send({ name: 'b' })
      .then((response) => response);
    const other = request(base)
      .put('/files/4/queued')
      .send({ name: 'other' })
      .then((response) => response);
    await gates.entered('queued:other'); // another key is not blocked by file:3
    gates.open('queued:other');
    expect((await other).status).toBe(200);
    // b waits for a: it cannot have entered yet, so opening its gate first proves nothing ran early.
    let bEntered = false;
    void gates.entered('queued:b').then(() => (bEntered = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(bEntered).toBe(false);
    gates.open('queued:b');
    gates.open('queued:a');
    expect((await a).status).toBe(200);
    expect((await b).status).toBe(200);
    expect(bEntered).toBe(true);
  });

  it('answers 400 naming the placeholder when a value is missing, null, or an object, and never locks "undefined"', async () => {
    for (const body of [{}, { id: null }, { id: { nested: 1 } }, { id: [1] }]) {
      const response = await request(base).post('/files/by-body').send(body);
      expect(response.status).toBe(400);
      expect(response.body.message).toContain('<<body.id>>');
    }
    expect(backend.requested).toEqual([]);
    const ok = await request(base).post('/files/by-body').send({ id: 'a:b*' });
    expect(ok.status).toBe(201);
    expect(backend.requested).toEqual(['file:a%3Ab%2A']);
  });

  it('answers 400 for a key the core rejects (too long)', async () => {
    const response = await request(base)
      .post('/files/by-body')
      .send({ id: 'x'.repeat(2_000) });
    expect(response.status).toBe(400);
    expect(response.body.message).toContain('limit is 1024');
  });

  it('answers 503 when the lock is lost while the handler runs, without waiting for the handler', async () => {
    const pending = request(base)
      .put('/files/5/lose')
      .then((response) => response);
    await gates.entered('lose:5');
    const held = app.get(FilesController).lastLock!;
    // Someone deletes the lock behind the holder's back (as an expiry would): the next renewal finds it gone.
    await backend.release(backend.granted(held.token));
    const response = await pending;
    expect(response.status).toBe(503);
    expect(response.body).toMatchObject({ statusCode: 503, key: 'file:5' });
    expect(response.body.message).toContain('was lost');
  });

  it('answers 503 when the backend is unreachable, without leaking its address', async () => {
    await backend.inner.close();
    const response = await request(base).put('/files/6');
    expect(response.status).toBe(503);
    expect(response.body.message).toBe('The lock service is unavailable. Try again later.');
    expect(JSON.stringify(response.body)).not.toContain('in-process');
  });

  it('locks several keys in sorted order, and de-duplicates a key named twice (still a Map for @CurrentLock)', async () => {
    const response = await request(base).post('/accounts/transfer').send({ from: 'b', to: 'a' });
    expect(response.status).toBe(201);
    expect(response.body.keys).toEqual(['account:a', 'account:b']);
    expect(backend.requested).toEqual(['account:a', 'account:b']);
    const same = await request(base).post('/accounts/transfer').send({ from: 'c', to: 'c' });
    expect(same.status).toBe(201);
    expect(same.body.keys).toEqual(['account:c']);
  });

  it('releases the keys already taken when a later one is busy', async () => {
    const holder = await locks.acquire('account:z');
    backend.requested.length = 0;
    const response = await request(base).post('/accounts/transfer').send({ from: 'z', to: 'y' });
    expect(response.status).toBe(409);
    expect(response.body.key).toBe('account:z');
    expect(backend.requested).toEqual(['account:y', 'account:z']);
    expect(await locks.isLocked('account:y')).toBe(false);
    await holder.release();
  });

  it('does not deadlock when opposite transfers run at once', async () => {
    const one = request(base)
      .post('/accounts/transfer')
      .send({ from: 'p', to: 'q', gate: 'pq' })
      .then((response) => response);
    await gates.entered('pq');
    // The reverse transfer needs the same keys in the same (sorted) order, so it finds p busy and fails fast
    // instead of holding q while waiting for p.
    const two = await request(base).post('/accounts/transfer').send({ from: 'q', to: 'p' });
    expect(two.status).toBe(409);
    expect(two.body.key).toBe('account:p');
    gates.open('pq');
    expect((await one).status).toBe(201);
  });

  it('applies a class-level @WithLock to every handler, and a method-level one overrides it', async () => {
    const pending = request(base)
      .get('/docs/1')
      .then((response) => response);
    await gates.entered('doc:1');
    expect(await locks.isLocked('doc:1')).toBe(true);
    expect((await request(base).get('/docs/1')).status).toBe(409);
    gates.open('doc:1');
    expect((await pending).body.key).toBe('doc:1');
    expect((await request(base).get('/docs/1/override')).body.key).toBe('doc-override:1');
  });

  it('holds the lock until a returned Observable completes', async () => {
    const pending = request(base)
      .get('/files/7/later')
      .then((response) => response);
    await gates.entered('later:7');
    expect(await locks.isLocked('file:7')).toBe(true);
    gates.open('later:7');
    const response = await pending;
    expect(response.body).toEqual({ id: '7' });
    expect(await locks.isLocked('file:7')).toBe(false);
  });

  it('holds the lock while an SSE stream runs and releases it when the client disconnects', async () => {
    const firstEvent = deferred<string>();
    let received = '';
    const client = get(`${base}/files/8/ticks`, (response) => {
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        received += chunk;
        if (received.includes('"tick":0')) firstEvent.resolve(received);
      });
    });
    client.on('error', () => undefined);
    try {
      await firstEvent.promise;
      expect(await locks.isLocked('file:8')).toBe(true);
    } finally {
      client.destroy();
    }
    await gates.entered('ticks-ended:8');
    await eventually(async () => !(await locks.isLocked('file:8')), 5_000, 'release after disconnect');
  });

  it('streams the held lock’s renewals over SSE', async () => {
    const response = await request(base)
      .get('/files/9/renewals')
      .buffer(true)
      .parse((res, done) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => done(null, text));
      });
    const events = (response.body as string).split('\n\n').filter((event) => event.includes('data:'));
    expect(events).toHaveLength(3);
    for (const event of events) {
      expect(event).toContain('event: renewed');
      expect(event).toContain('"held":true');
    }
    expect(await locks.isLocked('file:9')).toBe(false);
  });

  it('lets a locked service method called from a locked handler reuse the request’s lock (reentrancy)', async () => {
    const pending = request(base)
      .put('/files/10/nested')
      .then((response) => response);
    await gates.entered('nested:10');
    // Still held by the request after the nested method returned; another request is refused.
    expect((await request(base).put('/files/10')).status).toBe(409);
    // Called outside the request, the same locked method does not get the request's lock.
    await expect(app.get(DocumentService).touch('10')).rejects.toMatchObject({ name: 'LockTimeoutError' });
    gates.open('nested:10');
    const response = await pending;
    expect(response.status).toBe(200);
    expect(response.body.inner).toEqual({ fencingToken: response.body.outer, sameHandle: true });
    expect(response.body.stillHeld).toBe(true);
    expect(await locks.isLocked('file:10')).toBe(false);
  });

  it('accepts a function of the ExecutionContext as the key', async () => {
    const response = await request(base).get('/files/12/computed');
    expect(response.status).toBe(200);
    expect(response.body.key).toBe('computed:12');
  });
});

describe('LockInterceptor in other context types', () => {
  class Resolver {
    @WithLock('static-key', { waitTimeout: 0 })
    resolve() {
      return 'resolved';
    }

    @WithLock('item:<<id>>')
    withPlaceholder() {
      return 'never';
    }
  }

  /** A transport this library does not know (a custom transport strategy's own context type). */
  function customContext(handler: Function): TypedContext {
    return new TypedContext('custom-transport', [{}, { id: 1 }, {}, {}], Resolver, handler);
  }

  it('locks a template without placeholders, and leaves lock errors unmapped', async () => {
    const locks = new LockService(new MemoryLockBackend());
    const interceptor = new LockInterceptor(locks, new Reflector());
    const next = { handle: () => of(Resolver.prototype.resolve()) };
    await expect(firstValueFrom(interceptor.intercept(customContext(Resolver.prototype.resolve), next))).resolves.toBe(
      'resolved',
    );
    const held = await locks.acquire('static-key');
    await expect(
      firstValueFrom(interceptor.intercept(customContext(Resolver.prototype.resolve), next)),
    ).rejects.toBeInstanceOf(LockTimeoutError);
    await held.release();
    await expect(
      firstValueFrom(interceptor.intercept(customContext(Resolver.prototype.withPlaceholder), next)),
    ).rejects.toThrow(/Pass a function instead/);
    await locks.close();
  });
});

describe('@WithLock at decoration time', () => {
  it('throws for a malformed template when the class is defined, not per request', () => {
    expect(() => {
      class Broken {
        @WithLock('file:<<id')
        handler() {}
      }
      return Broken;
    }).toThrow(InvalidKeyTemplateError);
    expect(() => WithLock('file:<<>>')).toThrow(/empty placeholder/);
    expect(() => WithLock([])).toThrow(/at least one key template/);
  });

  it('rejects unknown or impossible options', () => {
    expect(() => WithLock('a', { ttl: 0 })).toThrow(/Invalid ttl/);
    expect(() => WithLock('a', { waitTimeout: -1 })).toThrow(/waitTimeout/);
    expect(() => WithLock('a', { wait: 1 } as never)).toThrow(/Invalid @WithLock options: Unknown option "wait"/);
    expect(() => WithLock('a', { mode: 'read', permits: 2 })).toThrow(/cannot be combined/);
    expect(() => WithLock('a', { signal: new AbortController().signal })).toThrow(/does not take a signal/);
    expect(() => WithLock('a', { mode: 'read', maxHold: 60_000 })).not.toThrow();
  });
});
