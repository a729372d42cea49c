import { createConnection, createServer, Server, Socket } from 'node:net';

/**
 * A loopback TCP proxy in front of the ZooKeeper server, so a test can take one client's network away
 * without touching the server or the other clients:
 *  - cut(): drops every open connection and refuses new ones (the client sees a disconnect at once and keeps
 *    retrying; the server keeps the session until its timeout);
 *  - dropReplies(): requests still reach the server but its answers are lost on the way back;
 *  - silence(): nothing gets through open connections in either direction, yet they stay open, as in a
 *    network partition or a hung host (no FIN, no RST); new connections are refused, so that a reconnection
 *    succeeds as soon as the test calls restore().
 */
export class FaultProxy {
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();
  private refusing = false;
  private replies = true;
  private requests = true;
  private readonly swallowWatchers = new Set<(chunk: Buffer) => void>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly targetPort: number,
  ) {
    server.on('connection', (client) => this.accept(client));
  }

  static start(targetPort: number): Promise<FaultProxy> {
    return new Promise((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        if (address === null || typeof address === 'string') return reject(new Error('proxy has no port'));
        resolve(new FaultProxy(server, address.port, targetPort));
      });
    });
  }

  get connectionString(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Connections currently forwarded. */
  get openConnections(): number {
    return this.pairs.size;
  }

  cut(): void {
    this.refusing = true;
    for (const pair of [...this.pairs]) this.drop(pair);
  }

  restore(): void {
    this.refusing = false;
    this.replies = true;
    this.requests = true;
  }

  dropReplies(): void {
    this.replies = false;
  }

  silence(): void {
    this.refusing = true;
    this.replies = false;
    this.requests = false;
  }

  /** Resolves once a request chunk containing `text` was swallowed (see silence()): the client sent it. */
  swallowed(text: string): Promise<void> {
    return new Promise((resolve) => {
      const watcher = (chunk: Buffer) => {
        if (!chunk.includes(text)) return;
        this.swallowWatchers.delete(watcher);
        resolve();
      };
      this.swallowWatchers.add(watcher);
    });
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    if (this.refusing) {
      client.destroy();
      return;
    }
    const upstream = createConnection({ host: '127.0.0.1', port: this.targetPort });
    const pair = { client, upstream };
    this.pairs.add(pair);
    client.on('data', (chunk) => {
      if (this.requests) upstream.write(chunk);
      else for (const watcher of [...this.swallowWatchers]) watcher(chunk);
    });
    upstream.on('data', (chunk) => {
      if (this.replies) client.write(chunk);
    });
    const end = () => this.drop(pair);
    for (const socket of [client, upstream]) {
      socket.on('error', end);
      socket.on('close', end);
    }
  }

  private drop(pair: { client: Socket; upstream: Socket }): void {
    if (!this.pairs.delete(pair)) return;
    pair.client.destroy();
    pair.upstream.destroy();
  }
}
