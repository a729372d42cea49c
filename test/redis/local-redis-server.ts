import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A throw-away redis-server for the Redis backend's own suites: a free loopback port, no persistence,
 * a temp dir. Kept local and minimal; test/support has the shared harness.
 */
export interface LocalRedisServer {
  readonly port: number;
  readonly url: string;
  /** Stops and starts the process on the same port: with no persistence, every key is gone. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 10_000;

export async function startLocalRedis(): Promise<LocalRedisServer> {
  const dir = await mkdtemp(join(tmpdir(), 'redis-backend-spec-'));
  let port = await unusedPort();
  let child = await launch(port, dir).catch(async () => {
    // Someone took the port between our probe and redis-server's bind: one more try on another.
    port = await unusedPort();
    return launch(port, dir);
  });
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async restart() {
      await terminate(child);
      child = await launch(port, dir);
    },
    async stop() {
      await terminate(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A loopback port nothing listens on (the OS picked it free a moment ago). */
export function unusedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

async function launch(port: number, dir: string): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  let exited = false;
  child.once('exit', () => (exited = true));
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await answersPing(port))) {
    if (exited || Date.now() > deadline) {
      await terminate(child);
      throw new Error(`redis-server on 127.0.0.1:${port} did not answer PING`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return child;
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let reply = '';
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) finish(reply.startsWith('+PONG'));
    });
  });
}

function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
