/* eslint-disable @typescript-eslint/unbound-method -- methods are read here as values (metadata, parameter names), never called unbound */
import {
  Controller,
  Get,
  Global,
  INestApplication,
  Injectable,
  Module,
  OnModuleInit,
  Scope,
  SetMetadata,
} from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, LazyModuleLoader } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { firstValueFrom, isObservable, Observable, of, Subscriber, toArray } from 'rxjs';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { DistributedLockModule } from '../../lib/distributed-lock.module';
import { WithLock } from '../../lib/decorators/with-lock.decorator';
import { LockLostError, LockServiceClosedError } from '../../lib/errors';
import { isLockedOn } from '../../lib/decorators/lockable-method';
import { InvalidKeyTemplateError } from '../../lib/errors';
import { UnresolvedPlaceholderError } from '../../lib/errors';
import type { LockHandle } from '../../lib/lock-handle';
import { LockService } from '../../lib/lock.service';
import { RecordingBackend } from '../support/recording-backend';
import { CaptureLogger } from './support/capture-logger';
import { deferred, Gates } from './support/gates';

const TAGGED = 'test:tagged';

@Injectable()
class ReportService {
  lastLock?: LockHandle;

  constructor(
    private readonly locks: LockService,
    private readonly gates: Gates,
  ) {}

  @WithLock('report:<<reportId>>')
  @SetMetadata(TAGGED, 'generate')
  async generate(reportId: string, gate?: string): Promise<string> {
    this.lastLock = this.locks.current(`report:${reportId}`);
    if (gate) await this.gates.pass(gate);
    return `report ${reportId}`;
  }

  @WithLock('report:<<0>>')
  async fail(_id: string, error: Error): Promise<never> {
    throw error;
  }

  @WithLock('report:<<0>>')
  failSync(_id: string, error: Error): never {
    throw error;
  }

  @WithLock('order:<<order.id>>')
  // eslint-disable-next-line @typescript-eslint/no-unused-vars -- the template reads the parameter by its name
  async byOrder(order: { id: number }): Promise<string | undefined> {
    return this.locks.current()?.key;
  }

  @WithLock('report:<<0>>')
  async outer(id: string): Promise<{ outer: bigint; inner: bigint }> {
    return { outer: this.locks.current()!.fencingToken, inner: await this.inner(id) };
  }

  @WithLock('report:<<0>>', { waitTimeout: 0 })
  async inner(_id: string): Promise<bigint> {
    return this.locks.current()!.fencingToken;
  }

  @WithLock('feed:<<0>>')
  feed(_id: string, source: Observable<number>): Observable<number> {
    return source;
  }

  @WithLock('feed:<<0>>')
  undeclared(_id: string) {
    return of(1);
  }

  @WithLock((context) => `job:${String(context.getArgs()[0])}:${context.getType()}`)
  async job(_name: string): Promise<string | undefined> {
    return this.locks.current()?.key;
  }

  @WithLock('report:<<0>>', { ttl: 1_000, renewInterval: 50 })
  async losable(_id: string, gate: string): Promise<string> {
    this.lastLock = this.locks.current();
    await this.gates.pass(gate);
    return 'finished';
  }
}

@Injectable({ scope: Scope.TRANSIENT })
class TransientWorker {
  @WithLock('transient:<<0>>')
  async work(_id: string): Promise<boolean> {
    return true;
  }
}

@Injectable()
class TransientConsumer {
  constructor(readonly worker: TransientWorker) {}
}

@Controller('reports')
class ReportsController {
  @Get(':id')
  @WithLock('report:<<id>>')
  read(): string {
    return 'ok';
  }
}

describe('@WithLock on provider methods (explorer)', () => {
  let app: INestApplication;
  let service: ReportService;
  let locks: LockService;
  let backend: RecordingBackend;
  let gates: Gates;

  beforeEach(async () => {
    gates = new Gates();
    backend = new RecordingBackend(new MemoryLockBackend());
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend, defaults: { ttl: 5_000, waitTimeout: 5_000 } })],
      controllers: [ReportsController],
      providers: [ReportService, TransientWorker, TransientConsumer, { provide: Gates, useValue: gates }],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    service = app.get(ReportService);
    locks = app.get(LockService);
  });

  afterEach(async () => {
    gates.openAll();
    await app.close();
  });

  it('holds the lock while the method runs and returns its result', async () => {
    const pending = service.generate('r1', 'generate:r1');
    await gates.entered('generate:r1');
    expect(await locks.isLocked('report:r1')).toBe(true);
    expect(service.lastLock?.key).toBe('report:r1');
    gates.open('generate:r1');
    await expect(pending).resolves.toBe('report r1');
    expect(await locks.isLocked('report:r1')).toBe(false);
  });

  it('serialises calls on the same key', async () => {
    const first = service.generate('r2', 'first');
    await gates.entered('first');
    const second = service.generate('r2', 'second');
    let secondEntered = false;
    void gates.entered('second').then(() => (secondEntered = true));
    gates.open('second');
    await new Promise((resolve) => setImmediate(resolve));
    expect(secondEntered).toBe(false);
    gates.open('first');
    await expect(first).resolves.toBe('report r2');
    await expect(second).resolves.toBe('report r2');
    expect(secondEntered).toBe(true);
  });

  it('rethrows exactly what the method threw, sync or async, and releases', async () => {
    const error = new Error('boom');
    await expect(service.fail('r3', error)).rejects.toBe(error);
    await expect(service.failSync('r3', error)).rejects.toBe(error);
    expect(await locks.isLocked('report:r3')).toBe(false);
  });

  it('resolves placeholders by parameter name and path', async () => {
    await expect(service.byOrder({ id: 42 })).resolves.toBe('order:42');
  });

  it('rejects a call whose placeholder has no value, without locking anything', async () => {
    const before = backend.serverCalls;
    await expect(service.byOrder(undefined as never)).rejects.toBeInstanceOf(UnresolvedPlaceholderError);
    await expect(service.byOrder({} as never)).rejects.toThrow('<<order.id>> is missing');
    expect(backend.serverCalls).toBe(before);
  });

  it('is reentrant: a locked method calling another on the same key reuses the lock', async () => {
    const { outer, inner } = await service.outer('r4');
    expect(inner).toBe(outer);
    expect(await locks.isLocked('report:r4')).toBe(false);
  });

  it('returns a cold Observable that holds the lock from subscription to completion', async () => {
    const { source, subscribed } = controllable<number>();
    const result = service.feed('f1', source);
    expect(isObservable(result)).toBe(true);
    expect(await locks.isLocked('feed:f1')).toBe(false);
    const values = firstValueFrom(result.pipe(toArray()));
    const subscriber = await subscribed;
    expect(await locks.isLocked('feed:f1')).toBe(true);
    subscriber.next(1);
    subscriber.next(2);
    expect(await locks.isLocked('feed:f1')).toBe(true);
    subscriber.complete();
    await expect(values).resolves.toEqual([1, 2]);
    expect(await locks.isLocked('feed:f1')).toBe(false);
  });

  it('releases when the Observable is unsubscribed', async () => {
    const { source, subscribed, unsubscribed } = controllable<number>();
    const subscription = service.feed('f2', source).subscribe();
    await subscribed;
    expect(await locks.isLocked('feed:f2')).toBe(true);
    subscription.unsubscribe();
    await unsubscribed;
    await waitUntil(async () => !(await locks.isLocked('feed:f2')));
  });

  it('refuses an Observable from a method that does not declare it, and releases', async () => {
    await expect(service.undeclared('f3')).rejects.toThrow(/Annotate its return type/);
    expect(await locks.isLocked('feed:f3')).toBe(false);
  });

  it('calls a key function with the arguments and the "method" context type', async () => {
    await expect(service.job('nightly')).resolves.toBe('job:nightly:method');
  });

  it('rejects with LockLostError as soon as the lock is lost', async () => {
    const pending = service.losable('r5', 'losable');
    await gates.entered('losable');
    await backend.release(backend.granted(service.lastLock!.token));
    await expect(pending).rejects.toBeInstanceOf(LockLostError);
  });

  it('keeps other decorators’ metadata and the method name on the locked method', () => {
    expect(isLockedOn(service, 'generate')).toBe(true);
    expect(service.generate.name).toBe('generate');
    expect(Reflect.getMetadata(TAGGED, service.generate)).toBe('generate');
  });

  it('locks each instance of a transient provider', async () => {
    const worker = app.get(TransientConsumer).worker;
    expect(isLockedOn(worker, 'work')).toBe(true);
    await expect(worker.work('t1')).resolves.toBe(true);
  });

  it('leaves controllers to the interceptor', () => {
    expect(isLockedOn(app.get(ReportsController), 'read')).toBe(false);
  });
});

describe('explorer startup checks', () => {
  async function boot(providers: Function[]): Promise<{ app: INestApplication; logger: CaptureLogger }> {
    const logger = new CaptureLogger();
    @Module({ providers: providers as never[] })
    class FeatureModule {}
    // Global, like the interceptor's LockService must be visible wherever @WithLock is used.
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ isGlobal: true }), FeatureModule],
    })
      .setLogger(logger)
      .compile();
    const app = moduleRef.createNestApplication({ logger });
    return { app, logger };
  }

  it('warns once when forRoot is registered in several modules: each is its own service, and memory backends do not exclude each other', async () => {
    const logger = new CaptureLogger();
    @Module({ imports: [DistributedLockModule.forRoot()] })
    class OrdersModule {}
    @Module({ imports: [DistributedLockModule.forRoot()] })
    class BillingModule {}
    const moduleRef = await Test.createTestingModule({ imports: [OrdersModule, BillingModule] })
      .setLogger(logger)
      .compile();
    const app = moduleRef.createNestApplication({ logger });
    await app.init();
    try {
      const warnings = logger.warnings.filter((line) => line.includes('is registered 2 times'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(
        /memory backends of these do not exclude each other\. Register it once with \{ isGlobal: true \}/,
      );
    } finally {
      await app.close();
    }
    // Once is quiet.
    const { app: single, logger: quiet } = await boot([]);
    await single.init();
    expect(quiet.warnings.filter((line) => line.includes('is registered'))).toEqual([]);
    await single.close();
  });

  it('fails at startup for a placeholder that names no parameter', async () => {
    @Injectable()
    class Misnamed {
      @WithLock('report:<<reportid>>')
      async run(reportId: string): Promise<string> {
        return reportId;
      }
    }
    const { app } = await boot([Misnamed]);
    await expect(app.init()).rejects.toThrow(InvalidKeyTemplateError);
    await expect(app.init()).rejects.toThrow(
      /<<reportid>> on Misnamed.run names no parameter \(its parameters are reportId\)/,
    );
    await app.close();
  });

  it('warns about request-scoped providers and class-level @WithLock on providers', async () => {
    @Injectable({ scope: Scope.REQUEST })
    class PerRequest {
      @WithLock('x:<<0>>')
      async run(id: string): Promise<string> {
        return id;
      }
    }
    @Injectable()
    @WithLock('y')
    class ClassLevel {
      run(): void {}
    }
    const { app, logger } = await boot([PerRequest, ClassLevel]);
    await app.init();
    expect(logger.warnings).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/PerRequest is request-scoped .* @WithLock on PerRequest.run is ignored/),
        expect.stringMatching(/@WithLock on the class ClassLevel has no effect/),
      ]),
    );
    await app.close();
  });
});

@Injectable()
class OrderWorker {
  constructor(private readonly locks: LockService) {}

  /** Three parameters: a caller that passes a third argument only to a function that takes one (bullmq) must see 3. */
  @WithLock('order:<<0>>')
  async process(orderId: string, _token?: string, _signal?: AbortSignal): Promise<string | undefined> {
    return this.locks.current(`order:${orderId}`)?.key;
  }
}

/**
 * Takes references to provider methods in its own onModuleInit, as @nestjs/bullmq's explorer does for processors
 * (`instance[method].bind(instance)`), in a global module listed before DistributedLockModule: its hook runs
 * before the lock module's explorer.
 */
@Injectable()
class EarlyMethodCopier implements OnModuleInit {
  copied?: OrderWorker['process'];

  constructor(private readonly discovery: DiscoveryService) {}

  onModuleInit(): void {
    const worker = this.discovery.getProviders().find((wrapper) => wrapper.instance instanceof OrderWorker)!
      .instance as OrderWorker;
    this.copied = worker.process.bind(worker);
  }
}

@Global()
@Module({ imports: [DiscoveryModule], providers: [EarlyMethodCopier], exports: [EarlyMethodCopier] })
class EarlyCopierModule {}

@Injectable()
class BaseStore {
  constructor(protected readonly locks: LockService) {}

  @WithLock('base:<<0>>')
  async save(id: string): Promise<string[]> {
    return [`base:${id}`, `derived:${id}`].filter((key) => this.locks.current(key) !== undefined);
  }
}

@Injectable()
class DerivedStore extends BaseStore {
  @WithLock('derived:<<0>>')
  override async save(id: string): Promise<string[]> {
    return super.save(id);
  }
}

@Injectable()
class PlainOverrideStore extends BaseStore {
  override async save(id: string): Promise<string[]> {
    const outside = this.locks.current(`base:${id}`);
    const inside = await super.save(id);
    return outside ? ['held before super'] : inside;
  }
}

describe('@WithLock where other code holds the method', () => {
  let app: INestApplication;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [EarlyCopierModule, DistributedLockModule.forRoot({ backend: new MemoryLockBackend(), isGlobal: true })],
      providers: [OrderWorker, DerivedStore, PlainOverrideStore],
    }).compile();
    app = moduleRef.createNestApplication();
    await app.init();
  });

  afterAll(async () => {
    await app.close();
  });

  it('locks a reference another module took before the lock module initialised (bullmq processors)', async () => {
    await expect(app.get(EarlyMethodCopier).copied!('o-1')).resolves.toBe('order:o-1');
    await expect(app.get(OrderWorker).process('o-2')).resolves.toBe('order:o-2');
  });

  it('keeps the method’s length, which callers such as bullmq read to decide what to pass', () => {
    expect(app.get(OrderWorker).process.length).toBe(3);
    expect(app.get(EarlyMethodCopier).copied!.length).toBe(3);
  });

  it('takes the base method’s lock too when an override calls it with super', async () => {
    await expect(app.get(DerivedStore).save('s1')).resolves.toEqual(['base:s1', 'derived:s1']);
  });

  it('runs an override without @WithLock unlocked, and its super call takes the base method’s lock', async () => {
    await expect(app.get(PlainOverrideStore).save('s2')).resolves.toEqual(['base:s2']);
  });

  it('runs unlocked on an instance the module never saw (made with new)', async () => {
    const worker = new OrderWorker(app.get(LockService));
    await expect(worker.process('o-3')).resolves.toBeUndefined();
  });
});

@Injectable()
class NestingJob {
  constructor(
    private readonly gates: Gates,
    private readonly reports: ReportService,
  ) {}

  @WithLock('job:<<0>>')
  async run(id: string): Promise<string> {
    await this.gates.pass('nesting');
    return this.reports.generate(id);
  }
}

describe('@WithLock provider methods on shutdown', () => {
  it('lets a running locked method finish with its lock before the module releases it (app.close)', async () => {
    const gates = new Gates();
    const backend = new MemoryLockBackend();
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend, defaults: { ttl: 5_000 } })],
      providers: [ReportService, { provide: Gates, useValue: gates }],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const observer = new LockService(backend);
    const running = app.get(ReportService).generate('shutdown', 'shutdown');
    await gates.entered('shutdown');
    let closed = false;
    const closing = app.close().then(() => (closed = true));
    // The close has reached its wait: the module's other shutdown steps ran first (one macrotask is enough).
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);
    expect(await observer.isLocked('report:shutdown')).toBe(true);
    gates.open('shutdown');
    await expect(running).resolves.toBe('report shutdown');
    await closing;
    expect(closed).toBe(true);
  });

  it('refuses a locked method call that starts once shutdown began, but not one inside a running locked call', async () => {
    const gates = new Gates();
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend: new MemoryLockBackend(), defaults: { ttl: 5_000 } })],
      providers: [ReportService, NestingJob, { provide: Gates, useValue: gates }],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const job = app.get(NestingJob).run('n1');
    await gates.entered('nesting');
    const closing = app.close();
    await new Promise((resolve) => setImmediate(resolve));
    await expect(app.get(ReportService).generate('late')).rejects.toBeInstanceOf(LockServiceClosedError);
    // The running job goes on, and its nested locked call (another key) is granted.
    gates.open('nesting');
    await expect(job).resolves.toBe('report n1');
    await closing;
  });

  it('refuses a call still waiting for its lock when shutdown begins, without waiting out its waitTimeout', async () => {
    const gates = new Gates();
    const moduleRef = await Test.createTestingModule({
      imports: [
        DistributedLockModule.forRoot({
          backend: new MemoryLockBackend(),
          defaults: { ttl: 5_000, waitTimeout: 60_000 },
        }),
      ],
      providers: [ReportService, { provide: Gates, useValue: gates }],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const reports = app.get(ReportService);
    const running = reports.generate('busy', 'busy');
    await gates.entered('busy');
    const queued = reports.generate('busy');
    const closing = app.close();
    // Refused while the running call still holds the key: the shutdown does not wait for the queued one's turn.
    await expect(queued).rejects.toBeInstanceOf(LockServiceClosedError);
    gates.open('busy');
    await expect(running).resolves.toBe('report busy');
    await closing;
  });
});

async function waitUntil(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** An Observable that tells the test when it is subscribed and unsubscribed, and lets it emit. */
function controllable<T>(): { source: Observable<T>; subscribed: Promise<Subscriber<T>>; unsubscribed: Promise<void> } {
  const subscribed = deferred<Subscriber<T>>();
  const unsubscribed = deferred();
  const source = new Observable<T>((subscriber) => {
    subscribed.resolve(subscriber);
    return () => unsubscribed.resolve();
  });
  return { source, subscribed: subscribed.promise, unsubscribed: unsubscribed.promise };
}

@Injectable()
class LazyReports {
  constructor(private readonly locks: LockService) {}

  @WithLock('lazy:<<0>>')
  async generate(_id: string): Promise<string | undefined> {
    return this.locks.current()?.key;
  }
}

@Injectable({ scope: Scope.TRANSIENT })
class LazyTransientReports extends LazyReports {}

@Injectable({ scope: Scope.TRANSIENT })
class EagerTransientReports extends LazyReports {}

@Injectable()
class LazyReportsUser {
  constructor(readonly reports: LazyTransientReports) {}
}

@Module({ providers: [LazyReports, LazyTransientReports, LazyReportsUser] })
class LazyReportsModule {}

describe('@WithLock provider methods of a lazily loaded module', () => {
  it('are locked once the module is loaded, though Nest runs no lifecycle hook there; so are transient instances from resolve()', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend: new MemoryLockBackend(), isGlobal: true })],
      providers: [EagerTransientReports],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const lazy = await app.get(LazyModuleLoader).load(() => LazyReportsModule);
      const reports = lazy.get(LazyReports);
      await expect(reports.generate('7')).resolves.toBe('lazy:7');
      expect(isLockedOn(reports, 'generate')).toBe(true);
      // A transient provider's instance, one per consumer, and one made by resolve() (not listed anywhere).
      await expect(lazy.get(LazyReportsUser).reports.generate('9')).resolves.toBe('lazy:9');
      await expect((await lazy.resolve(LazyTransientReports)).generate('10')).resolves.toBe('lazy:10');
      // The same in a module loaded at startup.
      await expect((await app.resolve(EagerTransientReports)).generate('11')).resolves.toBe('lazy:11');
      // An instance made outside Nest is still called as written.
      await expect(new LazyReports(app.get(LockService)).generate('8')).resolves.toBeUndefined();
    } finally {
      await app.close();
    }
  });
});
