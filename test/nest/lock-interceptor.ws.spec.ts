import { ArgumentsHost, Catch, INestApplication, Module, UseFilters } from '@nestjs/common';
import { IoAdapter } from '@nestjs/platform-socket.io';
import { Test } from '@nestjs/testing';
import {
  BaseWsExceptionFilter,
  MessageBody,
  SubscribeMessage,
  WebSocketGateway,
  WsException,
  WsResponse,
} from '@nestjs/websockets';
import { interval, map, Observable, take } from 'rxjs';
import { io, Socket } from 'socket.io-client';
import { DistributedLockModule } from '../../lib/distributed-lock.module';
import { CurrentLock } from '../../lib/decorators/current-lock.decorator';
import { WithLock } from '../../lib/decorators/with-lock.decorator';
import type { LockHandle } from '../../lib/lock-handle';
import { LockModuleMissingError } from '../../lib/errors';
import { LockService } from '../../lib/lock.service';
import { describeLockError } from '../../lib/interceptors/lock-error-response';
import { eventually } from '../support/time';
import { CaptureLogger } from './support/capture-logger';
import { Gates } from './support/gates';

@WebSocketGateway()
class FilesGateway {
  constructor(private readonly gates: Gates) {}

  @SubscribeMessage('edit')
  @WithLock('file:<<id>>', { waitTimeout: 0 })
  async edit(@MessageBody() data: { id: unknown; gate?: string }, @CurrentLock() lock: LockHandle) {
    if (data.gate) await this.gates.pass(data.gate);
    return { key: lock.key, token: lock.fencingToken.toString() };
  }

  /** An Observable handler: the lock is held until the stream completes. */
  @SubscribeMessage('tail')
  @WithLock('file:<<file.id>>')
  tail(@CurrentLock() lock: LockHandle): Observable<WsResponse<{ key: string; tick: number }>> {
    return interval(20).pipe(
      take(3),
      map((tick) => ({ event: 'tick', data: { key: lock.key, tick } })),
    );
  }
}

/** What an app's own WebSocket exception filter sees: the lock error behind the WsException, via describeLockError. */
const described: unknown[] = [];

@Catch(WsException)
class DescribingFilter extends BaseWsExceptionFilter {
  override catch(exception: WsException, host: ArgumentsHost): void {
    described.push(describeLockError(exception));
    super.catch(exception, host);
  }
}

@WebSocketGateway({ namespace: 'filtered' })
@UseFilters(new DescribingFilter())
class FilteredGateway {
  @SubscribeMessage('take')
  @WithLock('slot:<<id>>', { waitTimeout: 0 })
  take(@CurrentLock() lock: LockHandle) {
    return { key: lock.key };
  }
}

/** A class-level @WithLock locks every message handler; other methods of the gateway are locked as a provider's. */
@WebSocketGateway({ namespace: 'orders' })
@WithLock('order:<<id>>', { waitTimeout: 0 })
class OrdersGateway {
  constructor(private readonly locks: LockService) {}

  @SubscribeMessage('ship')
  ship(@CurrentLock() lock: LockHandle) {
    return { key: lock.key };
  }

  @WithLock('order:<<orderId>>')
  async audit(orderId: string): Promise<string> {
    return `${orderId} under ${this.locks.current()?.key}`;
  }
}

describe('LockInterceptor on WebSocket gateway handlers (socket.io)', () => {
  let app: INestApplication;
  let gates: Gates;
  let socket: Socket;
  let exceptions: unknown[];
  let logger: CaptureLogger;
  let port: number;

  beforeAll(async () => {
    gates = new Gates();
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot()],
      providers: [FilesGateway, OrdersGateway, FilteredGateway, { provide: Gates, useValue: gates }],
    }).compile();
    logger = new CaptureLogger();
    app = moduleRef.createNestApplication({ logger });
    app.useWebSocketAdapter(new IoAdapter(app));
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as { port: number }).port;
    socket = await connect('/');
    exceptions = [];
    socket.on('exception', (body: unknown) => exceptions.push(body));
  });

  async function connect(namespace: string): Promise<Socket> {
    const client = io(`http://127.0.0.1:${port}${namespace}`, { transports: ['websocket'], reconnection: false });
    await new Promise<void>((resolve, reject) => {
      client.once('connect', resolve);
      client.once('connect_error', reject);
    });
    return client;
  }

  afterAll(async () => {
    gates.openAll();
    socket.close();
    await app.close();
  });

  /** The next `exception` event the server emits to this socket. */
  function nextException(): Promise<unknown> {
    const seen = exceptions.length;
    return new Promise((resolve) => {
      const check = (): void => {
        if (exceptions.length > seen) resolve(exceptions[seen]);
        else socket.once('exception', check);
      };
      check();
    });
  }

  it('locks the key built from the message payload, and answers with the handler result', async () => {
    const reply = await socket.timeout(10_000).emitWithAck('edit', { id: 'a/1' });
    expect(reply).toEqual({ key: 'file:a%2F1', token: expect.stringMatching(/^\d+$/) });
    expect(await app.get(LockService).isLocked('file:a%2F1')).toBe(false);
  });

  it('answers a busy key with a WsException carrying the 409 body and status "error"', async () => {
    const first = socket.timeout(10_000).emitWithAck('edit', { id: 'busy', gate: 'busy' });
    await gates.entered('busy');
    expect(await app.get(LockService).isLocked('file:busy')).toBe(true);
    const exception = nextException();
    socket.emit('edit', { id: 'busy' });
    expect(await exception).toMatchObject({
      status: 'error',
      statusCode: 409,
      code: 'LockTimeoutError',
      key: 'file:busy',
    });
    gates.open('busy');
    await expect(first).resolves.toMatchObject({ key: 'file:busy' });
  });

  it('answers a missing placeholder with the 400 body naming it, and locks nothing', async () => {
    const exception = nextException();
    socket.emit('edit', { other: 1 });
    expect(await exception).toMatchObject({
      status: 'error',
      statusCode: 400,
      code: 'UnresolvedPlaceholderError',
      message: expect.stringContaining('<<id>>'),
    });
  });

  it('holds the lock of an Observable handler until its stream completes', async () => {
    const ticks: Array<{ key: string; tick: number }> = [];
    const done = new Promise<void>((resolve) => {
      const onTick = (data: { key: string; tick: number }): void => {
        ticks.push(data);
        if (ticks.length === 3) {
          socket.off('tick', onTick);
          resolve();
        }
      };
      socket.on('tick', onTick);
    });
    const locks = app.get(LockService);
    socket.emit('tail', { file: { id: 't' } });
    const firstTick = new Promise<void>((resolve) => socket.once('tick', () => resolve()));
    await firstTick;
    expect(await locks.isLocked('file:t')).toBe(true);
    await done;
    expect(ticks.map((tick) => tick.tick)).toEqual([0, 1, 2]);
    expect(ticks.every((tick) => tick.key === 'file:t')).toBe(true);
    // The release follows the stream's completion on the server, after the last tick was sent.
    await eventually(async () => !(await locks.isLocked('file:t')), 'the lock of the completed stream is released');
  });

  it("lets an app's exception filter read the lock error behind the WsException (describeLockError)", async () => {
    const filtered = await connect('/filtered');
    try {
      const held = await app.get(LockService).acquire('slot:7');
      const exception = new Promise<unknown>((resolve) => filtered.once('exception', resolve));
      filtered.emit('take', { id: 7 });
      expect(await exception).toMatchObject({ status: 'error', statusCode: 409, code: 'LockTimeoutError' });
      expect(described).toEqual([
        expect.objectContaining({ statusCode: 409, code: 'LockTimeoutError', key: 'slot:7' }),
      ]);
      await held.release();
    } finally {
      filtered.close();
    }
  });

  it('applies a class-level @WithLock to each message handler, without a startup warning', async () => {
    const orders = await connect('/orders');
    try {
      await expect(orders.timeout(10_000).emitWithAck('ship', { id: 7 })).resolves.toEqual({ key: 'order:7' });
    } finally {
      orders.close();
    }
    expect(logger.warnings.filter((warning) => warning.includes('@WithLock'))).toEqual([]);
  });

  it("locks a gateway's other @WithLock methods as a provider's, with placeholders naming parameters", async () => {
    await expect(app.get(OrdersGateway).audit('9')).resolves.toBe('9 under order:9');
  });
});

describe('@WithLock on a gateway in a module that cannot see DistributedLockModule', () => {
  @WebSocketGateway({ namespace: 'orphan' })
  class OrphanGateway {
    @SubscribeMessage('take')
    @WithLock('orphan:<<id>>')
    take(@MessageBody() data: { id: string }) {
      return data;
    }
  }

  @Module({ providers: [OrphanGateway] })
  class OrphanGatewayModule {}

  it('fails at startup, naming the module to import it into, as for a controller', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot(), OrphanGatewayModule],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    const failure = app.init();
    await expect(failure).rejects.toBeInstanceOf(LockModuleMissingError);
    await expect(failure).rejects.toThrow(
      /OrphanGateway\.take .*isGlobal: true \}, or import into OrphanGatewayModule the module that registers it/,
    );
    await app.close();
  });
});
