import {
  CanActivate,
  Controller,
  ExecutionContext,
  Get,
  Injectable,
  INestApplication,
  Param,
  UseGuards,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { get, type ClientRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { DistributedLockModule } from '../../lib/distributed-lock.module';
import { WithLock } from '../../lib/decorators/with-lock.decorator';
import { LockService } from '../../lib/lock.service';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { RecordingBackend } from '../support/recording-backend';
import { eventually } from '../support/time';
import { CaptureLogger } from './support/capture-logger';
import { Gates } from './support/gates';
import { createHttpApp, HTTP_PLATFORMS, nodeResponse } from './support/http-adapters';

/** Tells the test when a request's client left (x-gate), and waits for the test first when asked to (x-slow). */
@Injectable()
class SlowGuard implements CanActivate {
  constructor(private readonly gates: Gates) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const headers = http.getRequest<{ headers: Record<string, string | undefined> }>().headers;
    const gate = headers['x-gate'];
    if (gate) {
      nodeResponse(http.getResponse()).once('close', () => {
        void this.gates.pass(`left:${gate}`);
      });
      if (headers['x-slow']) await this.gates.pass(`guard:${gate}`);
    }
    return true;
  }
}

@Controller('slots')
class SlotsController {
  readonly ran: string[] = [];

  @Get(':id')
  @UseGuards(SlowGuard)
  @WithLock('slot:<<id>>', { waitTimeout: 10_000 })
  take(@Param('id') id: string) {
    this.ran.push(id);
    return { id };
  }
}

describe.each(HTTP_PLATFORMS)('LockInterceptor and clients that leave (%s)', (platform) => {
  let app: INestApplication;
  let base: string;
  let gates: Gates;
  let logger: CaptureLogger;
  let locks: LockService;
  let backend: RecordingBackend;
  const clients: ClientRequest[] = [];

  beforeEach(async () => {
    gates = new Gates();
    backend = new RecordingBackend(new MemoryLockBackend());
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend })],
      controllers: [SlotsController],
      providers: [SlowGuard, { provide: Gates, useValue: gates }],
    }).compile();
    logger = new CaptureLogger();
    app = createHttpApp(moduleRef, platform, { logger });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    locks = app.get(LockService);
  });

  afterEach(async () => {
    gates.openAll();
    for (const client of clients.splice(0)) client.destroy();
    await app.close();
  });

  /** A request its client will drop; its errors (the socket going away) are expected. */
  function leavingRequest(path: string, gate: string, slowGuard: boolean): ClientRequest {
    const headers: Record<string, string> = { 'x-gate': gate, ...(slowGuard && { 'x-slow': '1' }) };
    const client = get(`${base}${path}`, { headers }, () => undefined);
    client.on('error', () => undefined);
    clients.push(client);
    return client;
  }

  it('cancels the wait of a client that left before it began (during a slow guard), so it never takes the lock', async () => {
    const holder = await locks.acquire('slot:q');
    const gone = leavingRequest('/slots/q', 'a', true);
    await gates.entered('guard:a');
    gone.destroy();
    await gates.entered('left:a');
    gates.open('guard:a');
    await eventually(() => backend.calls.acquire === 2, 'the request that was left asked for the busy key');
    // Its wait ended at once: the next request is served as soon as the holder releases.
    const next = request(base)
      .get('/slots/q')
      .then((response) => response);
    await holder.release();
    expect((await next).body).toEqual({ id: 'q' });
    expect(app.get(SlotsController).ran).toEqual(['q']);
    expect(logger.errors).toEqual([]);
  });

  it('logs no server error for a client that left while queued', async () => {
    const holder = await locks.acquire('slot:w');
    const gone = leavingRequest('/slots/w', 'b', false);
    await eventually(() => backend.calls.acquire === 2, 'the request asked for the busy key');
    gone.destroy();
    await gates.entered('left:b');
    // Its wait ended: the next request is served as soon as the holder releases.
    const next = request(base)
      .get('/slots/w')
      .then((response) => response);
    await holder.release();
    expect((await next).body).toEqual({ id: 'w' });
    expect(app.get(SlotsController).ran).toEqual(['w']);
    expect(logger.errors).toEqual([]);
  });
});
