import {
  CanActivate,
  Controller,
  ExecutionContext,
  INestApplication,
  Injectable,
  Module,
  UseGuards,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import type { LockBackend } from '../../lib/backends/lock-backend.interface';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { DistributedLockModule } from '../../lib/distributed-lock.module';
import { DistributedLockAdminModule, type LockAdminModuleOptions } from '../../lib/admin/lock-admin.module';
import { LockAdminController } from '../../lib/admin/lock-admin.controller';
import { LockService } from '../../lib/lock.service';
import { eventually } from './support/eventually';

/** Lets a request through when it carries the operator's header. */
@Injectable()
class OperatorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest().headers['x-operator'] === 'yes';
  }
}

async function adminApp(
  admin: LockAdminModuleOptions,
  backend: LockBackend = new MemoryLockBackend(),
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      DistributedLockModule.forRoot({ backend, isGlobal: true, keyPrefix: 'admin', instanceId: 'api-1' }),
      DistributedLockAdminModule.register(admin),
    ],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('LockAdminController', () => {
  let app: INestApplication | undefined;

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('refuses requests the guard rejects', async () => {
    app = await adminApp({ guards: [OperatorGuard] });
    await request(app.getHttpServer()).get('/locks').expect(403);
    await request(app.getHttpServer()).get('/locks/file%3A42').expect(403);
  });

  it('GET /locks/:key shows the holder, its fencing token and expiry, and the waiters in order', async () => {
    app = await adminApp({ guards: [OperatorGuard] });
    const locks = app.get(LockService);
    const lock = await locks.acquire('file:42', { ttl: 30_000 });
    const waiting = [
      locks.acquire('file:42', { waitTimeout: 20_000 }),
      locks.acquire('file:42', { mode: 'read', waitTimeout: 20_000 }),
    ];
    await eventually(
      async () => ((await locks.inspect('file:42')).waiters?.length === 2 ? true : undefined),
      10_000,
      'two waiters',
    );

    const response = await request(app.getHttpServer()).get('/locks/file%3A42').set('x-operator', 'yes').expect(200);
    expect(response.body).toEqual({
      key: 'file:42',
      namespace: 'admin',
      backend: 'memory',
      address: 'in-process',
      holders: [
        {
          holder: locks.holderId,
          mode: 'exclusive',
          fencingToken: lock.fencingToken.toString(),
          since: expect.any(Number),
          expiresAt: expect.any(Number),
        },
      ],
      waiters: [
        { holder: locks.holderId, mode: 'exclusive', since: expect.any(Number) },
        { holder: locks.holderId, mode: 'read', since: expect.any(Number) },
      ],
    });
    expect(response.body.holders[0].expiresAt - response.body.holders[0].since).toBeGreaterThan(20_000);
    expect(JSON.stringify(response.body)).not.toContain(lock.token);

    await lock.release();
    for (const next of waiting) await (await next).release();
  });

  it('GET /locks lists the locks this instance holds, and a free key shows no holders', async () => {
    app = await adminApp({ guards: [OperatorGuard], path: 'ops/locks' });
    const locks = app.get(LockService);
    const a = await locks.acquire('file:1');
    const b = await locks.acquire('job:nightly', { family: 'jobs' });

    const response = await request(app.getHttpServer()).get('/ops/locks').set('x-operator', 'yes').expect(200);
    expect(response.body).toMatchObject({
      holder: locks.holderId,
      namespace: 'admin',
      backend: 'memory',
      heldCount: 2,
    });
    expect(response.body.holder).toMatch(/\/\d+\/api-1$/);
    expect(response.body.held).toEqual([
      expect.objectContaining({
        key: 'file:1',
        family: 'file',
        mode: 'exclusive',
        fencingToken: a.fencingToken.toString(),
      }),
      expect.objectContaining({ key: 'job:nightly', family: 'jobs', fencingToken: b.fencingToken.toString() }),
    ]);

    await a.release();
    const after = await request(app.getHttpServer()).get('/ops/locks').set('x-operator', 'yes').expect(200);
    expect(after.body.held.map((entry: { key: string }) => entry.key)).toEqual(['job:nightly']);
    const free = await request(app.getHttpServer()).get('/ops/locks/file%3A1').set('x-operator', 'yes').expect(200);
    expect(free.body).toMatchObject({ key: 'file:1', holders: [], waiters: [] });
    await b.release();
  });

  it('answers 400 for an invalid key and 501 when the backend cannot inspect', async () => {
    app = await adminApp({ guards: [OperatorGuard] });
    const tooLong = 'x'.repeat(1_100);
    const invalid = await request(app.getHttpServer()).get(`/locks/${tooLong}`).set('x-operator', 'yes').expect(400);
    expect(invalid.body.message).toMatch(/Invalid lock key/);
    await app.close();

    const memory = new MemoryLockBackend();
    const blind: LockBackend = {
      kind: 'blind',
      address: 'in-process',
      tryAcquire: (r) => memory.tryAcquire(r),
      acquire: (r, s) => memory.acquire(r, s),
      extend: (l, t) => memory.extend(l, t),
      release: (l) => memory.release(l),
      isLocked: (n, k) => memory.isLocked(n, k),
      close: () => memory.close(),
    };
    app = await adminApp({ guards: [OperatorGuard] }, blind);
    const unsupported = await request(app.getHttpServer()).get('/locks/file%3A1').set('x-operator', 'yes').expect(501);
    expect(unsupported.body.message).toMatch(/does not support inspect/);
  });

  it('will not mount without a guard unless told so', async () => {
    expect(() => DistributedLockAdminModule.register()).toThrow(/needs guards/);
    // A misspelt path would mount the inspector where nobody looks for it.
    expect(() => DistributedLockAdminModule.register({ unguarded: true, pth: 'admin/locks' } as never)).toThrow(
      'Unknown option "pth" in DistributedLockAdminModule.register() options. Known options: path, guards, imports, unguarded.',
    );
    app = await adminApp({ unguarded: true });
    await request(app.getHttpServer()).get('/locks').expect(200);
  });

  it('can be subclassed with its own path and guard, outside the admin module', async () => {
    @Controller('internal/locks')
    @UseGuards(OperatorGuard)
    class InternalLocksController extends LockAdminController {}

    @Module({ controllers: [InternalLocksController] })
    class OpsModule {}

    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ isGlobal: true, keyPrefix: 'admin' }), OpsModule],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    await request(app.getHttpServer()).get('/internal/locks').expect(403);
    const response = await request(app.getHttpServer()).get('/internal/locks').set('x-operator', 'yes').expect(200);
    expect(response.body).toMatchObject({ namespace: 'admin', heldCount: 0 });
    // Without the admin module's tracker it reports the count only.
    expect(response.body.held).toBeUndefined();
  });
});
