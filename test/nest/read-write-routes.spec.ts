import { Controller, Get, INestApplication, Param, Put } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { DistributedLockModule, LockService, MemoryLockBackend, WithLock } from '../../lib';
import { createHttpApp, HTTP_PLATFORMS } from './support/http-adapters';

/** Routes whose handlers wait on a gate, so the test decides when each one finishes. */
const gates = new Map<string, () => void>();
const entered: string[] = [];
function holdUntilOpened(name: string): Promise<string> {
  entered.push(name);
  return new Promise((resolve) => gates.set(name, () => resolve(name)));
}

async function whenEntered(name: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!entered.includes(name)) {
    if (Date.now() > deadline) throw new Error(`${name} never entered its handler`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

@Controller('docs')
class DocsController {
  @Get(':id/:reader')
  @WithLock('doc:<<id>>', { mode: 'read' })
  read(@Param('reader') reader: string) {
    return holdUntilOpened(reader);
  }

  @Put(':id')
  @WithLock('doc:<<id>>', { waitTimeout: 0 })
  write() {
    return 'written';
  }

  @Put(':id/semaphore/:who')
  @WithLock('export:<<id>>', { permits: 2, waitTimeout: 0 })
  exportWith(@Param('who') who: string) {
    return holdUntilOpened(who);
  }
}

describe.each(HTTP_PLATFORMS)('@WithLock with read locks and semaphores (%s)', (platform) => {
  let app: INestApplication;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend: new MemoryLockBackend(), logging: false })],
      controllers: [DocsController],
    }).compile();
    app = createHttpApp(moduleRef, platform);
    await app.listen(0, '127.0.0.1');
  });

  afterAll(() => app.close());

  it('lets two readers run at once while a writer gets 409, then lets the writer in', async () => {
    const server = app.getHttpServer();
    const first = request(server).get('/docs/7/r1');
    const second = request(server).get('/docs/7/r2');
    const both = Promise.all([first.then((r) => r), second.then((r) => r)]);
    await whenEntered('r1');
    await whenEntered('r2');
    await request(server).put('/docs/7').expect(409);
    gates.get('r1')!();
    gates.get('r2')!();
    const [a, b] = await both;
    expect([a.status, b.status]).toEqual([200, 200]);
    await request(server).put('/docs/7').expect(200);
    expect(app.get(LockService).heldCount).toBe(0);
  });

  it('admits two holders of a permits: 2 semaphore and turns the third away', async () => {
    const server = app.getHttpServer();
    const one = request(server)
      .put('/docs/9/semaphore/s1')
      .then((r) => r);
    const two = request(server)
      .put('/docs/9/semaphore/s2')
      .then((r) => r);
    await whenEntered('s1');
    await whenEntered('s2');
    await request(server).put('/docs/9/semaphore/s3').expect(409);
    gates.get('s1')!();
    gates.get('s2')!();
    expect((await one).status).toBe(200);
    expect((await two).status).toBe(200);
  });
});
