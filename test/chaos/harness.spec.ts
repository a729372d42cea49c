import { createServer, Server, Socket, connect } from 'node:net';
import { checkHistory } from './harness/checker';
import { FaultProxy } from './harness/fault-proxy';
import { startRegister, Register } from './harness/register';
import type { RegisterStats } from './harness/register-protocol';
import type { SectionRecord } from './harness/worker-protocol';
import { zipfSampler } from './harness/zipf';

/** Sections on one key, times in ms (turned into ns), validity `ms` after the grant. */
function section(worker: string, token: number, from: number, to: number, validFor = 1_000): SectionRecord {
  const ns = (value: number) => String(BigInt(Math.round(value * 1e6)));
  return {
    worker,
    contender: 0,
    key: 'k',
    token: String(token),
    acquiredAt: ns(from),
    validUntil: ns(from + validFor),
    releasedAt: ns(to),
    waitMs: 0,
    read: 'ok',
    write: 'ok',
  };
}

const stats = (value: number, accepted: number, extra: Partial<RegisterStats['keys'][string]> = {}): RegisterStats => ({
  fenced: true,
  keys: { k: { value, accepted, rejectedReads: 0, rejectedWrites: 0, staleAccepted: 0, highest: '0', ...extra } },
});

describe('the history checker', () => {
  it('finds nothing wrong in a clean history', () => {
    const report = checkHistory(
      [section('a', 1, 0, 10), section('b', 2, 11, 20), section('a', 3, 21, 30)],
      stats(3, 3),
    );
    expect(report).toMatchObject({
      sections: 3,
      overlaps: [],
      unsafeOverlaps: [],
      tokenOrderViolations: 0,
      lostUpdates: 0,
    });
  });

  it('tells a zombie (granted after the earlier validity ended) from a double grant inside it', () => {
    // b is granted at 1 500, after a's validity (1 000) but before a released (3 000): a zombie overlap.
    const zombie = checkHistory([section('a', 1, 0, 3_000), section('b', 2, 1_500, 1_600)], stats(1, 1));
    expect(zombie.overlaps).toHaveLength(1);
    expect(zombie.unsafeOverlaps).toHaveLength(0);
    // c is granted at 500, inside a's validity: the lock service double-granted.
    const double = checkHistory([section('a', 1, 0, 3_000), section('c', 2, 500, 600)], stats(1, 1));
    expect(double.unsafeOverlaps).toHaveLength(1);
    expect(double.unsafeOverlaps[0].byMs).toBeCloseTo(500 - 3, 0);
  });

  it('counts each overlapped section once, however many grants landed in it', () => {
    const report = checkHistory(
      [section('a', 1, 0, 3_000), section('b', 2, 1_500, 1_600), section('c', 3, 1_700, 1_800)],
      stats(2, 2),
    );
    expect(report.overlaps).toHaveLength(1);
  });

  it('reports tokens that do not increase in grant order', () => {
    expect(checkHistory([section('a', 5, 0, 10), section('b', 4, 20, 30)], stats(2, 2)).tokenOrderViolations).toBe(1);
  });

  it('counts acknowledged writes the register no longer reflects as lost', () => {
    expect(checkHistory([], stats(7, 10)).lostUpdates).toBe(3);
  });

  it('measures recovery from a fault to the next grant to another worker', () => {
    const sections = [section('a', 1, 0, 10), section('a', 2, 200, 210), section('b', 3, 1_000, 1_010)];
    const report = checkHistory(sections, stats(3, 3), [{ kind: 'pause', at: 100_000_000n, worker: 'a' }]);
    expect(report.recoveryMs).toEqual([900]);
  });
});

describe('the fenced register', () => {
  let fenced: Register;
  let unfenced: Register;

  beforeAll(async () => {
    [fenced, unfenced] = await Promise.all([startRegister({ fenced: true }), startRegister({ fenced: false })]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([fenced?.stop(), unfenced?.stop()]);
  });

  it('refuses reads and writes carrying a lower token than one it has seen, on that key only', async () => {
    const client = fenced.client;
    expect(await client.read('x', 5n)).toEqual({ ok: true, value: 0 });
    expect(await client.write('x', 5n, 1, 'a')).toEqual({ ok: true });
    expect(await client.read('x', 7n)).toEqual({ ok: true, value: 1 });
    expect(await client.write('x', 5n, 2, 'a')).toEqual({ ok: false, highest: '7' });
    expect(await client.read('x', 6n)).toEqual({ ok: false, highest: '7' });
    expect(await client.write('y', 1n, 1, 'a')).toEqual({ ok: true });
    expect((await client.stats()).keys.x).toMatchObject({ value: 1, accepted: 1, rejectedReads: 1, rejectedWrites: 1 });
    expect(await client.history('x')).toEqual([expect.objectContaining({ token: '5', value: 1, worker: 'a' })]);
  });

  it('in the control run accepts stale tokens and counts them', async () => {
    const client = unfenced.client;
    await client.read('x', 7n);
    expect(await client.write('x', 5n, 1, 'a')).toEqual({ ok: true });
    expect((await client.stats()).keys.x).toMatchObject({ value: 1, staleAccepted: 1, rejectedWrites: 0 });
  });
});

describe('the fault proxy', () => {
  let echo: Server;
  let proxy: FaultProxy;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    echo = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.pipe(socket);
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    proxy = await FaultProxy.start((echo.address() as { port: number }).port);
  });

  afterEach(() => {
    proxy.pass();
    for (const socket of sockets.splice(0)) socket.destroy();
  });

  afterAll(async () => {
    await proxy.close();
    await new Promise((resolve) => echo.close(resolve));
  });

  async function client(): Promise<{ socket: Socket; next: () => Promise<string>; closed: Promise<string> }> {
    const socket = connect(proxy.port, '127.0.0.1');
    sockets.push(socket);
    const received: string[] = [];
    let wake: (() => void) | undefined;
    socket.on('data', (chunk) => {
      received.push(chunk.toString());
      wake?.();
    });
    const closed = new Promise<string>((resolve) => {
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
      socket.on('close', () => resolve('closed'));
    });
    await new Promise((resolve) => socket.once('connect', resolve));
    return {
      socket,
      closed,
      next: () =>
        new Promise<string>((resolve) => {
          const take = () => {
            if (received.length === 0) return;
            wake = undefined;
            resolve(received.splice(0).join(''));
          };
          wake = take;
          take();
        }),
    };
  }

  it('passes traffic, holds it while black-holed and delivers it in order when healed', async () => {
    const { socket, next } = await client();
    socket.write('one');
    expect(await next()).toBe('one');
    proxy.blackhole();
    socket.write('two');
    socket.write('three');
    const healed = next();
    const raced = await Promise.race([healed, new Promise((resolve) => setTimeout(() => resolve('nothing yet'), 200))]);
    expect(raced).toBe('nothing yet');
    proxy.pass();
    let text = await healed;
    while (text.length < 'twothree'.length) text += await next();
    expect(text).toBe('twothree');
  });

  it('delays replies by the configured time', async () => {
    const { socket, next } = await client();
    proxy.delay(300, 'replies');
    const started = performance.now();
    socket.write('slow');
    expect(await next()).toBe('slow');
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('resets open connections and refuses new ones', async () => {
    const open = await client();
    proxy.resetAll();
    expect(await open.closed).toMatch(/ECONNRESET|closed/);
    proxy.refuse();
    const refused = connect(proxy.port, '127.0.0.1');
    sockets.push(refused);
    const outcome = await new Promise<string>((resolve) => {
      refused.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
      refused.on('close', () => resolve('closed'));
    });
    expect(outcome).toMatch(/ECONNRESET|closed/);
  });
});

describe('the Zipf sampler', () => {
  it('picks low ranks far more often, and only from the items given', () => {
    let seed = 1;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    const pick = zipfSampler(['a', 'b', 'c', 'd'], 1, random);
    const counts: Record<string, number> = { a: 0, b: 0, c: 0, d: 0 };
    for (let i = 0; i < 10_000; i++) counts[pick()] += 1;
    // 1 : 1/2 : 1/3 : 1/4 of 2.083
    expect(counts.a / 10_000).toBeCloseTo(0.48, 1);
    expect(counts.a).toBeGreaterThan(counts.b);
    expect(counts.b).toBeGreaterThan(counts.d);
  });
});
