import { Controller, Get, INestApplication, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import request from 'supertest';
import type { LockBackend } from '../../lib/backends/lock-backend.interface';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { DistributedLockModule } from '../../lib/distributed-lock.module';
import { LockHealthIndicator } from '../../lib/health/lock-health.indicator';
import { freeTestPort } from '../support/free-port';
import { sharedRedisUrl } from '../support/shared-servers';
import { startSilentServer } from './support/silent-server';

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly lock: LockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.lock.isHealthy('lock', { timeout: 500 })]);
  }
}

@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [HealthController],
  providers: [LockHealthIndicator],
})
class HealthModule {}

async function healthApp(backend: LockBackend, operationTimeout?: number): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      DistributedLockModule.forRoot({ backend, isGlobal: true, keyPrefix: 'health', operationTimeout }),
      HealthModule,
    ],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('LockHealthIndicator', () => {
  let app: INestApplication | undefined;

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('is up on the memory backend, with its latency', async () => {
    app = await healthApp(new MemoryLockBackend());
    const response = await request(app.getHttpServer()).get('/health').expect(200);
    expect(response.body).toEqual({
      status: 'ok',
      info: { lock: { status: 'up', backend: 'memory', address: 'in-process', latencyMs: expect.any(Number) } },
      error: {},
      details: { lock: { status: 'up', backend: 'memory', address: 'in-process', latencyMs: expect.any(Number) } },
    });
    expect(response.body.info.lock.latencyMs).toBeLessThan(500);
  });

  it('is up on a running Redis server', async () => {
    const backend = new RedisLockBackend({ url: sharedRedisUrl() });
    app = await healthApp(backend);
    const response = await request(app.getHttpServer()).get('/health').expect(200);
    expect(response.body.info.lock).toMatchObject({ status: 'up', backend: 'redis', address: backend.address });
    expect(response.body.info.lock.latencyMs).toBeGreaterThan(0);
  });

  it('is down, within its deadline, when the server accepts connections but never answers', async () => {
    const server = await startSilentServer();
    try {
      // No ready check: ioredis would otherwise leave a 2 s timer behind when the unanswered INFO fails on close.
      app = await healthApp(
        new RedisLockBackend({ url: `redis://127.0.0.1:${server.port}`, redisOptions: { enableReadyCheck: false } }),
      );
      const started = Date.now();
      const response = await request(app.getHttpServer()).get('/health').expect(503);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(response.body).toMatchObject({
        status: 'error',
        info: {},
        error: { lock: { status: 'down', backend: 'redis', address: `127.0.0.1:${server.port}` } },
      });
      expect(response.body.error.lock.message).toMatch(/no reply within 500 ms/);
      expect(response.body.error.lock.latencyMs).toBeGreaterThanOrEqual(450);
    } finally {
      await app?.close();
      app = undefined;
      await server.close();
    }
  });

  it('is down, within its deadline, naming the call and the connection when nothing listens and the client keeps retrying', async () => {
    const port = await freeTestPort();
    // ioredis keeps a command queued while it reconnects, even past disconnect(): the isLocked() under the
    // probe ends at the service's own deadline, kept short so that it ends with the test.
    app = await healthApp(new RedisLockBackend({ url: `redis://127.0.0.1:${port}` }), 1_000);
    const started = Date.now();
    const response = await request(app.getHttpServer()).get('/health').expect(503);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(response.body.error.lock.message).toMatch(
      new RegExp(
        `^LockBackendError: redis backend at 127\\.0\\.0\\.1:${port} failed during health check: no reply within 500 ms ` +
          `\\(connection (connecting|reconnecting); last connection error: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\)`,
      ),
    );
  });

  it("is down with the driver's reason when the client fails fast", async () => {
    const port = await freeTestPort();
    const client = new Redis({
      host: '127.0.0.1',
      port,
      password: 's3cret',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => undefined);
    try {
      app = await healthApp(new RedisLockBackend({ client }));
      const response = await request(app.getHttpServer()).get('/health').expect(503);
      expect(response.body.error.lock).toMatchObject({
        status: 'down',
        backend: 'redis',
        address: `127.0.0.1:${port}`,
      });
      expect(response.body.error.lock.message).toMatch(
        /^LockBackendError: redis backend at 127\.0\.0\.1:\d+ failed during isLocked: /,
      );
      expect(response.body.error.lock.message).not.toMatch(/no reply within/);
      expect(JSON.stringify(response.body)).not.toContain('s3cret');
    } finally {
      await app?.close();
      app = undefined;
      // After a refused connection with no retries the client has ended; disconnect() would only leave
      // ioredis' 2 s socket-destroy timer behind.
      if (client.status !== 'end') client.disconnect();
    }
  });
});
