import { Controller, INestMicroservice, Logger } from '@nestjs/common';
import { ClientProxy, ClientProxyFactory, MessagePattern, Payload, Transport } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { DistributedLockModule } from '../../lib/distributed-lock.module';
import { CurrentLock } from '../../lib/decorators/current-lock.decorator';
import { WithLock } from '../../lib/decorators/with-lock.decorator';
import type { LockHandle } from '../../lib/lock-handle';
import { LockService } from '../../lib/lock.service';
import * as optionalPackage from '../../lib/utils/optional-package';
import { freeTestPort } from '../support/free-port';
import { Gates } from './support/gates';

@Controller()
class JobsController {
  constructor(private readonly gates: Gates) {}

  @MessagePattern('job.run')
  @WithLock('job:<<id>>', { waitTimeout: 0 })
  async run(@Payload() data: { id: unknown; gate?: string }, @CurrentLock() lock: LockHandle) {
    if (data.gate) await this.gates.pass(data.gate);
    return { key: lock.key };
  }
}

describe('LockInterceptor on microservice (TCP) handlers', () => {
  let app: INestMicroservice;
  let client: ClientProxy;
  let gates: Gates;

  beforeAll(async () => {
    gates = new Gates();
    const port = await freeTestPort();
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot()],
      controllers: [JobsController],
      providers: [{ provide: Gates, useValue: gates }],
    }).compile();
    app = moduleRef.createNestMicroservice({
      transport: Transport.TCP,
      options: { host: '127.0.0.1', port },
      logger: false,
    });
    await app.listen();
    client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
    await client.connect();
  });

  afterAll(async () => {
    gates.openAll();
    await client.close();
    await app.close();
  });

  it('resolves placeholders from the message payload', async () => {
    await expect(firstValueFrom(client.send('job.run', { id: 'a:1' }))).resolves.toEqual({ key: 'job:a%3A1' });
  });

  it('answers a busy key with an RpcException carrying the 409 body', async () => {
    const first = firstValueFrom(client.send('job.run', { id: 'busy', gate: 'busy' }));
    await gates.entered('busy');
    expect(await app.get(LockService).isLocked('job:busy')).toBe(true);
    await expect(firstValueFrom(client.send('job.run', { id: 'busy' }))).rejects.toMatchObject({
      status: 'error',
      statusCode: 409,
      code: 'LockTimeoutError',
      key: 'job:busy',
    });
    gates.open('busy');
    await expect(first).resolves.toEqual({ key: 'job:busy' });
  });

  it('answers a missing placeholder with the 400 body naming it', async () => {
    await expect(firstValueFrom(client.send('job.run', { other: 1 }))).rejects.toMatchObject({
      statusCode: 400,
      code: 'UnresolvedPlaceholderError',
      message: expect.stringContaining('<<id>> is missing'),
    });
  });

  it('says once when it cannot load @nestjs/microservices (a layout where the library does not see the app’s copy)', async () => {
    const load = optionalPackage.loadOptionalPackage;
    const hide = jest.spyOn(optionalPackage, 'loadOptionalPackage').mockImplementation((name, feature) => {
      if (name === '@nestjs/microservices')
        throw new Error(
          `Cannot find module '${name}'\nRequire stack:\n- /app/node_modules/nest-distributed-lock/index.js`,
        );
      return load(name, feature);
    });
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      for (let call = 0; call < 2; call++) {
        await expect(firstValueFrom(client.send('job.run', { other: 1 }))).rejects.toMatchObject({ status: 'error' });
      }
      const lines = warn.mock.calls
        .map(([message]) => String(message))
        .filter((line) => line.includes('Could not load'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        /Could not load @nestjs\/microservices from nest-distributed-lock .*not as an RpcException: add @nestjs\/microservices to the dependencies of the package that depends on nest-distributed-lock/,
      );
      expect(lines[0]).not.toContain('Require stack');
    } finally {
      hide.mockRestore();
      warn.mockRestore();
    }
  });
});
