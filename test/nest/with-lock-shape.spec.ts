/* eslint-disable @typescript-eslint/unbound-method -- methods are read here as values (metadata, parameter names), never called unbound */
import {
  ArgumentMetadata,
  ArgumentsHost,
  Type,
  BadRequestException,
  Controller,
  Get,
  Injectable,
  INestApplication,
  Module,
  Param,
  PipeTransform,
  UseInterceptors,
  CallHandler,
  ExecutionContext,
  NestInterceptor,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Observable, tap } from 'rxjs';
import request from 'supertest';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { CurrentLock } from '../../lib/decorators/current-lock.decorator';
import { WithLock } from '../../lib/decorators/with-lock.decorator';
import { WITH_LOCK_METADATA } from '../../lib/distributed-lock.constants';
import { DistributedLockModule } from '../../lib/distributed-lock.module';
import { LockTimeoutError } from '../../lib/errors';
import { LockInterceptor } from '../../lib/interceptors/lock.interceptor';
import { LockModuleMissingError } from '../../lib/errors';
import type { LockEvent } from '../../lib/lock-event';
import type { LockHandle } from '../../lib/lock-handle';
import { LockService } from '../../lib/lock.service';
import { RecordingBackend } from '../support/recording-backend';
import { eventually, Gates } from './support/gates';

/** Rejects ids that are not digits, like a ValidationPipe would, and records whether the lock was held meanwhile. */
@Injectable()
class DigitsPipe implements PipeTransform {
  static seen: boolean[] = [];
  constructor(private readonly locks: LockService) {}

  async transform(value: unknown, _metadata: ArgumentMetadata): Promise<unknown> {
    DigitsPipe.seen.push(await this.locks.isLocked(`digits:${String(value)}`));
    if (typeof value !== 'string' || !/^\d+$/.test(value)) throw new BadRequestException('id must be digits');
    return value;
  }
}

/** Records whether the lock was held while the interceptor ran before and after the handler. */
@Injectable()
class HeldProbeInterceptor implements NestInterceptor {
  static seen: string[] = [];
  constructor(private readonly locks: LockService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const id = context.switchToHttp().getRequest().params.id as string;
    return new Observable((subscriber) => {
      void this.locks.isLocked(`probe:${id}`).then((before) => {
        HeldProbeInterceptor.seen.push(`before:${before}`);
        next
          .handle()
          .pipe(tap({ complete: () => HeldProbeInterceptor.seen.push('handler-done') }))
          .subscribe(subscriber);
      });
    });
  }
}

@Controller('base')
class BaseController {
  @Get(':id')
  read(@Param('id') id: string, @CurrentLock() lock?: LockHandle) {
    return { id, locked: lock?.key ?? null };
  }
}

/** Class-level @WithLock on a subclass: the inherited handler is locked here, not in the base controller. */
@Controller('derived')
@WithLock('derived:<<id>>')
class DerivedController extends BaseController {}

@Controller('things')
class ThingsController {
  constructor(private readonly gates: Gates) {}

  @Get('digits/:id')
  @WithLock('digits:<<id>>')
  digits(@Param('id', DigitsPipe) id: string, @CurrentLock() lock: LockHandle) {
    return { id, key: lock.key };
  }

  // Decorators apply bottom-up and each appends its interceptors: the lower one's run first (outside).
  @Get('probe/:id/inside')
  @UseInterceptors(HeldProbeInterceptor)
  @WithLock('probe:<<id>>')
  probeInside(@Param('id') id: string) {
    return { id };
  }

  @Get('probe/:id/outside')
  @WithLock('probe:<<id>>')
  @UseInterceptors(HeldProbeInterceptor)
  probeOutside(@Param('id') id: string) {
    return { id };
  }

  @Get('slow/:id')
  @WithLock('slow:<<id>>', { waitTimeout: 20_000 })
  async slow(@Param('id') id: string) {
    await this.gates.pass(`slow:${id}`);
    return { id };
  }

  @WithLock('busy:<<id>>', { waitTimeout: 0 })
  @Get('busy/:id')
  busy(@Param('id') id: string) {
    return { id };
  }
}

/** Changes only the Retry-After it advertises. */
@Injectable()
class PatientLockInterceptor extends LockInterceptor {
  protected override retryAfterSeconds(_error: LockTimeoutError): number {
    return 7;
  }
}

/** A class-level and a method-level @WithLock: both bind LockInterceptor, the method's keys win, locked once. */
@Controller('both')
@WithLock('both-class:<<id>>')
class BothLevelsController {
  @Get(':id')
  @WithLock('both-method:<<id>>')
  read(@Param('id') id: string, @CurrentLock() lock: LockHandle) {
    return { id, key: lock.key };
  }
}

/**
 * The same handler, its decorators applied in code in the given order, so that one test can try both orders:
 * @CurrentLock() (and the route's parameter) before @WithLock, and after it.
 */
function orderedController(order: 'lock-last' | 'lock-first'): Type {
  class OrderedController {
    read(id: string, lock?: LockHandle) {
      return { id, key: lock?.key ?? null, held: lock?.isHeld ?? false };
    }
  }
  const prototype = OrderedController.prototype;
  const descriptor = () => Object.getOwnPropertyDescriptor(prototype, 'read')!;
  const lock = () => WithLock('ordered:<<id>>')(prototype, 'read', descriptor());
  const params = () => {
    Param('id')(prototype, 'read', 0);
    CurrentLock()(prototype, 'read', 1);
  };
  if (order === 'lock-last') {
    params();
    lock();
  } else {
    lock();
    params();
  }
  Get(':id')(prototype, 'read', descriptor());
  Controller(`ordered-${order}`)(OrderedController);
  return OrderedController;
}

describe('@WithLock as metadata + LockInterceptor', () => {
  let app: INestApplication;
  let base: string;
  let locks: LockService;
  let backend: RecordingBackend;
  let gates: Gates;

  async function start(
    imports = [DistributedLockModule.forRoot({ backend, defaults: { ttl: 5_000, waitTimeout: 5_000 } })],
  ) {
    const moduleRef = await Test.createTestingModule({
      imports,
      controllers: [
        BaseController,
        DerivedController,
        ThingsController,
        BothLevelsController,
        orderedController('lock-last'),
        orderedController('lock-first'),
      ],
      providers: [{ provide: Gates, useValue: gates }, HeldProbeInterceptor],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    locks = app.get(LockService);
  }

  const waitersOn = async (key: string) =>
    (await (backend.inner as MemoryLockBackend).inspect('locks', key)).waiters?.length;

  beforeEach(() => {
    gates = new Gates();
    backend = new RecordingBackend(new MemoryLockBackend());
    HeldProbeInterceptor.seen = [];
    DigitsPipe.seen = [];
  });

  afterEach(async () => {
    gates.openAll();
    await app?.close();
  });

  it('leaves the method as written: called directly, it runs unlocked; the metadata sits on the method', () => {
    const controller = new ThingsController(gates);
    expect(controller.busy('5')).toEqual({ id: '5' });
    expect(ThingsController.prototype.busy.name).toBe('busy');
    expect(ThingsController.prototype.digits.length).toBe(2);
    expect(Reflect.getMetadata(WITH_LOCK_METADATA, ThingsController.prototype.digits)).toBeDefined();
    expect(Reflect.getMetadata(WITH_LOCK_METADATA, DerivedController)).toBeDefined();
  });

  it('locks an inherited handler under a class-level @WithLock, and leaves the base controller unlocked', async () => {
    await start();
    expect((await request(base).get('/derived/3')).body).toEqual({ id: '3', locked: 'derived:3' });
    expect((await request(base).get('/base/3')).body).toEqual({ id: '3', locked: null });
    expect(backend.calls.tryAcquire + backend.calls.acquire).toBe(1);
  });

  it('locks once with the method-level keys when the class has a @WithLock too', async () => {
    await start();
    expect((await request(base).get('/both/4')).body).toEqual({ id: '4', key: 'both-method:4' });
    expect(backend.calls.tryAcquire + backend.calls.acquire).toBe(1);
    expect(await locks.isLocked('both-method:4')).toBe(false);
  });

  it.each(['lock-last', 'lock-first'])('fills @CurrentLock whatever the decorator order (%s)', async (order) => {
    await start();
    const response = await request(base).get(`/ordered-${order}/7`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ id: '7', key: 'ordered:7', held: true });
    expect(await locks.isLocked('ordered:7')).toBe(false);
  });

  it('runs parameter pipes inside the lock, and releases it when a pipe rejects the request', async () => {
    await start();
    expect((await request(base).get('/things/digits/12')).body).toEqual({ id: '12', key: 'digits:12' });
    const rejected = await request(base).get('/things/digits/x1');
    expect(rejected.status).toBe(400);
    expect(rejected.body.message).toBe('id must be digits');
    expect(DigitsPipe.seen).toEqual([true, true]);
    expect(await locks.isLocked('digits:x1')).toBe(false);
  });

  it('runs an interceptor bound by a decorator above @WithLock inside the lock', async () => {
    await start();
    expect((await request(base).get('/things/probe/4/inside')).status).toBe(200);
    expect(HeldProbeInterceptor.seen).toEqual(['before:true', 'handler-done']);
    expect(await locks.isLocked('probe:4')).toBe(false);
  });

  it('runs an interceptor bound by a decorator below @WithLock before the lock is taken', async () => {
    await start();
    expect((await request(base).get('/things/probe/5/outside')).status).toBe(200);
    expect(HeldProbeInterceptor.seen).toEqual(['before:false', 'handler-done']);
    expect(await locks.isLocked('probe:5')).toBe(false);
  });

  it('cancels the wait of a queued request whose client disconnects', async () => {
    await start();
    const first = request(base)
      .get('/things/slow/1')
      .then((response) => response);
    await gates.entered('slow:1');
    const queued = httpRequest(`${base}/things/slow/1`);
    queued.on('error', () => undefined);
    queued.end();
    await eventually(async () => (await waitersOn('slow:1')) === 1, 10_000, 'the second request queued');
    queued.destroy();
    await eventually(async () => (await waitersOn('slow:1')) === 0, 10_000, 'the abandoned wait was cancelled');
    gates.open('slow:1');
    expect((await first).status).toBe(200);
    // Nobody took the lock after the holder: the abandoned request never ran.
    expect(await locks.isLocked('slow:1')).toBe(false);
  });

  it("carries the request's x-request-id into the lock events of its call, and none when it sent none", async () => {
    await start();
    const events: LockEvent[] = [];
    const subscription = locks.events$.subscribe((event) => events.push(event));
    try {
      await request(base).get('/things/digits/21').set('x-request-id', 'req-21').expect(200);
      await request(base).get('/things/digits/22').expect(200);
    } finally {
      subscription.unsubscribe();
    }
    const byKey = (key: string) =>
      events.filter((event) => event.key === key).map((event) => [event.type, event.requestId]);
    expect(byKey('digits:21')).toEqual([
      ['acquired', 'req-21'],
      ['released', 'req-21'],
    ]);
    expect(byKey('digits:22')).toEqual([
      ['acquired', undefined],
      ['released', undefined],
    ]);
  });

  it('answers through the LockInterceptor subclass given to forRoot', async () => {
    await start([
      DistributedLockModule.forRoot({
        backend,
        defaults: { ttl: 5_000, waitTimeout: 5_000 },
        lockInterceptor: PatientLockInterceptor,
      }),
    ]);
    const held = await locks.acquire('busy:9');
    const response = await request(base).get('/things/busy/9');
    expect(response.status).toBe(409);
    expect(response.headers['retry-after']).toBe('7');
    await held.release();
    expect((await request(base).get('/things/busy/9')).status).toBe(200);
  });

  it('accepts the LockInterceptor subclass from forRootAsync too', async () => {
    await start([
      DistributedLockModule.forRootAsync({
        useFactory: () => ({ backend, defaults: { ttl: 5_000, waitTimeout: 5_000 } }),
        lockInterceptor: PatientLockInterceptor,
      }),
    ]);
    const held = await locks.acquire('busy:10');
    expect((await request(base).get('/things/busy/10')).headers['retry-after']).toBe('7');
    await held.release();
  });
});

describe('@WithLock in a module that cannot see DistributedLockModule', () => {
  @Controller('orphan')
  class OrphanController {
    @Get(':id')
    @WithLock('orphan:<<id>>')
    get(@Param('id') id: string) {
      return { id };
    }
  }

  @Module({ controllers: [OrphanController] })
  class OrphanModule {}

  it('fails at startup, naming the module to import it into', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend: new MemoryLockBackend() }), OrphanModule],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    const failure = app.init();
    await expect(failure).rejects.toBeInstanceOf(LockModuleMissingError);
    await expect(failure).rejects.toThrow(
      /OrphanController\.get .*isGlobal: true \}, or import into OrphanModule the module that registers it/,
    );
    await app.close();
  });

  it('names the controller of a class-level @WithLock', async () => {
    @Controller('orphan-class')
    @WithLock('orphan-class:<<id>>')
    class OrphanClassController {
      @Get(':id')
      get(@Param('id') id: string) {
        return { id };
      }
    }
    @Module({ controllers: [OrphanClassController] })
    class OrphanClassModule {}
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend: new MemoryLockBackend() }), OrphanClassModule],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await expect(app.init()).rejects.toThrow(
      /@WithLock on OrphanClassController has no LockService: .* into OrphanClassModule/,
    );
    await app.close();
  });

  it('refuses each call with LockModuleMissingError when DistributedLockModule is imported nowhere', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [OrphanModule] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    let thrown: unknown;
    app.useGlobalFilters({
      catch: (error: unknown, host: ArgumentsHost) => {
        thrown = error;
        host.switchToHttp().getResponse().status(500).json({});
      },
    });
    await app.listen(0, '127.0.0.1');
    try {
      const url = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
      expect((await request(url).get('/orphan/1')).status).toBe(500);
      expect(thrown).toBeInstanceOf(LockModuleMissingError);
      expect((thrown as Error).message).toMatch(
        /OrphanController\.get has no LockService: register DistributedLockModule\.forRoot\(\.\.\.\) once with \{ isGlobal: true \}, or import into/,
      );
    } finally {
      await app.close();
    }
  });
});
