import { Inject, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import { LockBackend } from '../../lib/backends/lock-backend.interface';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { DistributedLockModule } from '../../lib/distributed-lock.module';
import {
  DistributedLockModuleOptions,
  DistributedLockOptionsFactory,
} from '../../lib/distributed-lock.module-definition';
import { LockBackendError, LockTimeoutError } from '../../lib/errors';
import { LockInterceptor } from '../../lib/interceptors/lock.interceptor';
import { LockService } from '../../lib/lock.service';
import { sharedRedisUrl } from '../support/shared-servers';

const CONFIG = 'TEST_CONFIG';

@Module({ providers: [{ provide: CONFIG, useValue: { prefix: 'from-config' } }], exports: [CONFIG] })
class ConfigModule {}

@Injectable()
class LockOptionsFromConfig implements DistributedLockOptionsFactory {
  createDistributedLockOptions(): DistributedLockModuleOptions {
    return { keyPrefix: 'from-class', defaults: { waitTimeout: 0 } };
  }
}

@Module({ providers: [LockOptionsFromConfig], exports: [LockOptionsFromConfig] })
class OptionsModule {}

@Injectable()
class PatientInterceptor extends LockInterceptor {}

@Injectable()
class Consumer {
  constructor(@Inject(LockService) readonly locks: LockService) {}
}

@Injectable()
class BackendByType {
  // No @Inject: the parameter's type is the token (tsc records the abstract class LockBackend).
  constructor(readonly backend: LockBackend) {}
}

async function compile(imports: unknown[], providers: unknown[] = []) {
  return Test.createTestingModule({ imports: imports as never[], providers: providers as never[] }).compile();
}

describe('DistributedLockModule', () => {
  it('defaults to an in-memory backend and the "locks" prefix', async () => {
    const moduleRef = await compile([DistributedLockModule.forRoot()]);
    const locks = moduleRef.get(LockService);
    expect(moduleRef.get(LockBackend)).toBeInstanceOf(MemoryLockBackend);
    expect(locks.backend).toBe(moduleRef.get(LockBackend));
    expect(locks.keyPrefix).toBe('locks');
    await moduleRef.close();
  });

  it('accepts a backend instance', async () => {
    const backend = new MemoryLockBackend();
    const moduleRef = await compile([DistributedLockModule.forRoot(backend)]);
    expect(moduleRef.get(LockBackend)).toBe(backend);
    expect(moduleRef.get(LockService).backend).toBe(backend);
    await moduleRef.close();
  });

  it('injects the backend into a constructor parameter typed LockBackend, with no @Inject', async () => {
    const backend = new MemoryLockBackend();
    const moduleRef = await compile([DistributedLockModule.forRoot({ backend, isGlobal: true })], [BackendByType]);
    expect(moduleRef.get(BackendByType).backend).toBe(backend);
    await moduleRef.close();
  });

  it('passes keyPrefix and defaults to LockService', async () => {
    const moduleRef = await compile([
      DistributedLockModule.forRoot({ keyPrefix: 'app', defaults: { ttl: 2_000, waitTimeout: 0 } }),
    ]);
    const locks = moduleRef.get(LockService);
    expect(locks.keyPrefix).toBe('app');
    const held = await locks.acquire('k');
    await expect(locks.acquire('k')).rejects.toBeInstanceOf(LockTimeoutError);
    await held.release();
    await moduleRef.close();
  });

  it('fails at startup on invalid options', async () => {
    await expect(compile([DistributedLockModule.forRoot({ keyPrefix: '{bad}' })])).rejects.toThrow(/Invalid keyPrefix/);
  });

  it('fails at startup on an option name it does not know, in forRoot, a factory or elections, listing the known ones', async () => {
    const typo = { keyprefix: 'billing' } as unknown as DistributedLockModuleOptions;
    await expect(compile([DistributedLockModule.forRoot(typo)])).rejects.toThrow(
      /Unknown option "keyprefix" in DistributedLockModule options\. Known options: keyPrefix, /,
    );
    await expect(compile([DistributedLockModule.forRootAsync({ useFactory: () => typo })])).rejects.toThrow(
      /Unknown option "keyprefix"/,
    );
    const electionTypo = { elections: { prefix: 'x' } } as unknown as DistributedLockModuleOptions;
    await expect(compile([DistributedLockModule.forRoot(electionTypo)])).rejects.toThrow(
      /Unknown option "prefix" in LeaderElection options/,
    );
  });

  it('refuses isGlobal or lockInterceptor from a forRootAsync factory, where they would be ignored, naming the fix', async () => {
    for (const extra of [{ isGlobal: true }, { lockInterceptor: PatientInterceptor }]) {
      const [name] = Object.keys(extra);
      const fromFactory = () => ({ keyPrefix: 'billing', ...extra }) as DistributedLockModuleOptions;
      await expect(compile([DistributedLockModule.forRootAsync({ useFactory: fromFactory })])).rejects.toThrow(
        `"${name}" came from the forRootAsync factory, where it has no effect. Pass it beside the factory`,
      );
    }
    // Beside the factory, and in forRoot, both are what they should be.
    const moduleRef = await compile([
      DistributedLockModule.forRoot({ isGlobal: true, lockInterceptor: PatientInterceptor, keyPrefix: 'billing' }),
      DistributedLockModule.forRootAsync({ isGlobal: true, useFactory: () => ({ keyPrefix: 'other' }) }),
    ]);
    await moduleRef.close();
  });

  it('refuses forRootAsync without useFactory, useClass or useExisting, with an example', () => {
    expect(() => DistributedLockModule.forRootAsync({ imports: [ConfigModule] })).toThrow(
      /forRootAsync\(\) needs useFactory \(with inject\), useClass or useExisting, e\.g\. forRootAsync\(\{ imports/,
    );
  });

  it('forRootAsync with useFactory, imports and inject', async () => {
    const moduleRef = await compile([
      DistributedLockModule.forRootAsync({
        imports: [ConfigModule],
        inject: [CONFIG],
        useFactory: async (config: { prefix: string }) => ({ keyPrefix: config.prefix }),
      }),
    ]);
    expect(moduleRef.get(LockService).keyPrefix).toBe('from-config');
    expect(moduleRef.get(LockBackend)).toBeInstanceOf(MemoryLockBackend);
    await moduleRef.close();
  });

  it('forRootAsync with useClass', async () => {
    const moduleRef = await compile([DistributedLockModule.forRootAsync({ useClass: LockOptionsFromConfig })]);
    const locks = moduleRef.get(LockService);
    expect(locks.keyPrefix).toBe('from-class');
    const held = await locks.acquire('k');
    await expect(locks.acquire('k')).rejects.toBeInstanceOf(LockTimeoutError);
    await held.release();
    await moduleRef.close();
  });

  it('forRootAsync with useExisting', async () => {
    const moduleRef = await compile([
      DistributedLockModule.forRootAsync({ imports: [OptionsModule], useExisting: LockOptionsFromConfig }),
    ]);
    expect(moduleRef.get(LockService).keyPrefix).toBe('from-class');
    await moduleRef.close();
  });

  it('isGlobal makes LockService injectable without importing the module', async () => {
    @Module({ providers: [Consumer], exports: [Consumer] })
    class FeatureModule {}
    const moduleRef = await compile([DistributedLockModule.forRoot({ isGlobal: true }), FeatureModule]);
    expect(moduleRef.get(Consumer).locks).toBe(moduleRef.get(LockService));
    await moduleRef.close();

    const asyncRef = await compile([
      DistributedLockModule.forRootAsync({ isGlobal: true, useFactory: () => ({}) }),
      FeatureModule,
    ]);
    expect(asyncRef.get(Consumer).locks).toBe(asyncRef.get(LockService));
    await asyncRef.close();
  });

  it('is not global by default', async () => {
    @Module({ providers: [Consumer] })
    class FeatureModule {}
    await expect(compile([DistributedLockModule.forRoot(), FeatureModule])).rejects.toThrow(
      /can't resolve dependencies of the Consumer/,
    );
  });

  it('starts and closes an app whose test replaced LockService with a plain object (found from outside: init threw)', async () => {
    const double = {
      run: jest.fn(),
      acquire: jest.fn(),
      tryAcquire: jest.fn(),
      isLocked: jest.fn(),
      current: jest.fn(),
      close: jest.fn(),
    };
    @Module({ providers: [Consumer], exports: [Consumer] })
    class FeatureModule {}
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ isGlobal: true }), FeatureModule],
    })
      .overrideProvider(LockService)
      .useValue(double)
      .compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    expect(app.get(Consumer).locks).toBe(double);
    await app.close();
  });

  it('releases every held lock and closes the backend on application shutdown', async () => {
    const backend = new MemoryLockBackend();
    const moduleRef = await compile([DistributedLockModule.forRoot(backend)]);
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const locks = app.get(LockService);
    const handles = await Promise.all([locks.acquire('a'), locks.acquire('b')]);
    await app.close();
    expect(handles.map((handle) => handle.state)).toEqual(['released', 'released']);
    await expect(backend.tryAcquire({ namespace: 'locks', key: 'a', token: 't', ttl: 1_000 })).rejects.toBeInstanceOf(
      LockBackendError,
    );
  });

  it('on shutdown frees the locks on Redis but leaves the application’s client open', async () => {
    const client = new Redis(sharedRedisUrl(), { lazyConnect: false });
    const observer = new LockService(new RedisLockBackend({ client }), { keyPrefix: 'module-spec' });
    try {
      const moduleRef = await compile([
        DistributedLockModule.forRoot({ backend: new RedisLockBackend({ client }), keyPrefix: 'module-spec' }),
      ]);
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      await app.get(LockService).acquire('shutdown', { ttl: 30_000 });
      expect(await observer.isLocked('shutdown')).toBe(true);
      await app.close();
      expect(await observer.isLocked('shutdown')).toBe(false);
      expect(await client.ping()).toBe('PONG');
    } finally {
      await observer.close();
      client.disconnect();
    }
  });
});
