import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeTestPort } from './free-port';
import {
  findBinary,
  ServerExitedError,
  SpawnedServer,
  spawnServer,
  stopServer,
  waitUntilReady,
} from './server-process';

export interface RedisServerOptions {
  /** Sets `requirepass`; the url then carries the password. */
  password?: string;
  /** Extra `--name value` pairs for redis-server. */
  extraArgs?: string[];
}

export interface TestRedisServer {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** redis://[:password@]127.0.0.1:port */
  readonly url: string;
  readonly pid: number;
  /** Graceful stop; removes the data dir. Idempotent. */
  stop(): Promise<void>;
  /** Sends a signal (SIGKILL to simulate a crash) and waits for the exit when the signal is fatal. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Stops (if still running) and starts a fresh, empty server on the same port. */
  restart(): Promise<void>;
  /** SIGSTOP: the server keeps its sockets but answers nothing, like a hung host. */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
}

const START_ATTEMPTS = 5;

/** Starts a throw-away redis-server on a free loopback port, without persistence, and waits until it answers. */
export async function startRedis(options: RedisServerOptions = {}): Promise<TestRedisServer> {
  const binary = findBinary('redis-server');
  for (let attempt = 1; ; attempt++) {
    const port = await freeTestPort();
    try {
      const running = await launch(binary, port, options);
      return wrap(binary, port, options, running);
    } catch (error) {
      if (error instanceof ServerExitedError && error.portTaken && attempt < START_ATTEMPTS) continue;
      throw error;
    }
  }
}

interface Running {
  server: SpawnedServer;
  dir: string;
}

async function launch(binary: string, port: number, options: RedisServerOptions): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'ndl-redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--daemonize',
    'no',
    '--loglevel',
    'warning',
    ...(options.password ? ['--requirepass', options.password] : []),
    ...(options.extraArgs ?? []),
  ];
  const server = spawnServer(binary, args);
  server.ownTempDir(dir);
  try {
    await waitUntilReady(server, `redis-server on 127.0.0.1:${port}`, () => pingRedis(port));
  } catch (error) {
    await stopServer(server);
    rmSync(dir, { recursive: true, force: true });
    server.forget();
    throw error;
  }
  return { server, dir };
}

function wrap(binary: string, port: number, options: RedisServerOptions, first: Running): TestRedisServer {
  let current: Running | undefined = first;
  const auth = options.password ? `:${encodeURIComponent(options.password)}@` : '';

  const shutDown = async (): Promise<void> => {
    const running = current;
    current = undefined;
    if (!running) return;
    await stopServer(running.server);
    rmSync(running.dir, { recursive: true, force: true });
    running.server.forget();
  };

  return {
    host: '127.0.0.1',
    port,
    url: `redis://${auth}127.0.0.1:${port}`,
    get pid() {
      return current?.server.pid ?? -1;
    },
    stop: shutDown,
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (!current?.server.isRunning()) return;
      current.server.child.kill(signal);
      if (signal === 'SIGKILL' || signal === 'SIGTERM' || signal === 'SIGINT') await current.server.exited;
    },
    async restart() {
      await shutDown();
      current = await launch(binary, port, options);
    },
    pause() {
      current?.server.child.kill('SIGSTOP');
    },
    resume() {
      current?.server.child.kill('SIGCONT');
    },
  };
}

/** One raw RESP PING over TCP. Any RESP reply (+PONG, -NOAUTH, -LOADING) proves the server is listening. */
export function pingRedis(port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    const timer = setTimeout(() => finish(new Error('PING timed out')), timeoutMs);
    timer.unref();
    let reply = '';
    const finish = (error?: Error) => {
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(reply.startsWith('+PONG') || reply.startsWith('-NOAUTH'));
    };
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      if (reply.includes('\r\n')) finish();
    });
    socket.once('error', finish);
  });
}
