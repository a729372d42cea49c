import { createConnection, createServer, Server, Socket } from 'node:net';

/** Which way a delay applies: requests (client -> server), replies (server -> client), or both. */
export type Direction = 'requests' | 'replies' | 'both';

/**
 * What the proxy does with traffic, switched at run time for open and new connections alike:
 *  - pass:      forwards at once;
 *  - blackhole: accepts and reads, forwards nothing and answers nothing, yet keeps every connection open,
 *               as a partition or a hung host does (no FIN, no RST). What it read is held and delivered
 *               when the mode changes back, as TCP retransmission would after a short partition heals;
 *  - delay:     forwards each chunk `ms` later, in order;
 *  - refuse:    resets new connections at once (open ones are left alone; see resetAll()).
 */
export type ProxyMode =
  | { readonly type: 'pass' }
  | { readonly type: 'blackhole' }
  | { readonly type: 'delay'; readonly ms: number; readonly direction: Direction }
  | { readonly type: 'refuse' };

const HELD = Number.POSITIVE_INFINITY;

/** One direction of one connection: a FIFO of chunks, each due at a time (HELD while black-holed). */
class Pipe {
  private readonly queue: { chunk: Buffer; dueAt: number }[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Chunks read, and chunks forwarded or dropped, since the start. */
  private pushed = 0;
  private done = 0;

  constructor(
    private readonly to: Socket,
    private readonly delayOf: () => number,
  ) {}

  push(chunk: Buffer): void {
    this.pushed += 1;
    this.queue.push({ chunk, dueAt: this.dueAt() });
    this.pump();
  }

  /** The mode changed: held chunks now follow the new mode. */
  replan(): void {
    for (const item of this.queue) if (item.dueAt === HELD) item.dueAt = this.dueAt();
    this.pump();
  }

  /** True once every chunk read so far has been forwarded (or dropped with the connection). */
  passedSoFar(): () => boolean {
    const upTo = this.pushed;
    return () => this.done >= upTo;
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.done += this.queue.length;
    this.queue.length = 0;
  }

  private dueAt(): number {
    const delay = this.delayOf();
    return delay === HELD ? HELD : Date.now() + delay;
  }

  private pump(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const now = Date.now();
    while (this.queue.length > 0 && this.queue[0].dueAt <= now) {
      const { chunk } = this.queue.shift()!;
      this.done += 1;
      if (!this.to.destroyed) this.to.write(chunk);
    }
    const next = this.queue[0];
    if (next && next.dueAt !== HELD) {
      this.timer = setTimeout(() => this.pump(), Math.max(0, next.dueAt - now));
    }
  }
}

interface Connection {
  readonly client: Socket;
  readonly upstream: Socket;
  readonly requests: Pipe;
  readonly replies: Pipe;
}

/**
 * A TCP proxy on a free loopback port in front of one server, for network faults that touch only the
 * clients that connect through it (the server and other clients are unaffected). Toxiproxy in miniature.
 */
export class FaultProxy {
  private readonly connections = new Set<Connection>();
  private current: ProxyMode = { type: 'pass' };
  private accepted = 0;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    readonly targetHost: string,
    readonly targetPort: number,
  ) {
    server.on('connection', (client) => this.accept(client));
  }

  static start(targetPort: number, targetHost = '127.0.0.1'): Promise<FaultProxy> {
    return new Promise((resolve, reject) => {
      const server = createServer({ noDelay: true });
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        if (address === null || typeof address === 'string') return reject(new Error('the proxy has no port'));
        const proxy = new FaultProxy(server, address.port, targetHost, targetPort);
        live.add(proxy);
        resolve(proxy);
      });
    });
  }

  /** 127.0.0.1:<port> */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get mode(): ProxyMode {
    return this.current;
  }

  /** Connections open now, and accepted since start. */
  get stats(): { open: number; accepted: number } {
    return { open: this.connections.size, accepted: this.accepted };
  }

  /**
   * True once everything read so far, on every open connection and both ways, has been forwarded: traffic delayed
   * under one mode that is still on its way would hold back (in order) what follows under the next.
   */
  passedSoFar(): () => boolean {
    const pipes = [...this.connections].flatMap((connection) => [connection.requests, connection.replies]);
    const checks = pipes.map((pipe) => pipe.passedSoFar());
    return () => checks.every((passed) => passed());
  }

  setMode(mode: ProxyMode): void {
    this.current = mode;
    for (const connection of this.connections) {
      connection.requests.replan();
      connection.replies.replan();
    }
  }

  pass(): void {
    this.setMode({ type: 'pass' });
  }

  blackhole(): void {
    this.setMode({ type: 'blackhole' });
  }

  delay(ms: number, direction: Direction = 'both'): void {
    this.setMode({ type: 'delay', ms, direction });
  }

  refuse(): void {
    this.setMode({ type: 'refuse' });
  }

  /** Resets (RST) every open connection; the mode stays as it is. */
  resetAll(): void {
    for (const connection of [...this.connections]) this.drop(connection, true);
  }

  async close(): Promise<void> {
    live.delete(this);
    for (const connection of [...this.connections]) this.drop(connection, false);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private delayFor(direction: 'requests' | 'replies'): number {
    const mode = this.current;
    if (mode.type === 'blackhole') return HELD;
    if (mode.type === 'delay' && (mode.direction === 'both' || mode.direction === direction)) return mode.ms;
    return 0;
  }

  private accept(client: Socket): void {
    if (this.current.type === 'refuse') {
      client.resetAndDestroy();
      return;
    }
    this.accepted += 1;
    client.setNoDelay(true);
    const upstream = createConnection({ host: this.targetHost, port: this.targetPort, noDelay: true });
    const connection: Connection = {
      client,
      upstream,
      requests: new Pipe(upstream, () => this.delayFor('requests')),
      replies: new Pipe(client, () => this.delayFor('replies')),
    };
    this.connections.add(connection);
    client.on('data', (chunk) => connection.requests.push(chunk));
    upstream.on('data', (chunk) => connection.replies.push(chunk));
    // A side that goes away takes the other with it, as a real connection through a proxy would.
    const end = () => this.drop(connection, false);
    for (const socket of [client, upstream]) {
      socket.on('error', end);
      socket.on('close', end);
    }
  }

  private drop(connection: Connection, reset: boolean): void {
    if (!this.connections.delete(connection)) return;
    connection.requests.stop();
    connection.replies.stop();
    for (const socket of [connection.client, connection.upstream]) {
      if (socket.destroyed) continue;
      // A socket whose peer already closed its side gets a plain destroy: resetting one (Node 20, libuv) can leave
      // the event loop spinning after the test, and there is no connection left to reset anyway.
      if (reset && !socket.readableEnded) socket.resetAndDestroy();
      else socket.destroy();
    }
  }
}

const live = new Set<FaultProxy>();

/** Closes every proxy still open (after a failed scenario). */
export async function closeAllProxies(): Promise<void> {
  await Promise.allSettled([...live].map((proxy) => proxy.close()));
}
