import { createConnection } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freeTestPort } from './free-port';
import {
  findBinary,
  launchServer,
  removeServerDir,
  retireServer,
  retryOnPortTaken,
  serverDir,
  type ServerControls,
  SpawnedServer,
} from './server-process';

export interface RedisServerOptions {
  /** Sets `requirepass`; the url then carries the password. */
  password?: string;
  /** Extra `--name value` pairs for redis-server. */
  extraArgs?: string[];
}

export interface TestRedisServer extends ServerControls {
  /** redis://[:password@]127.0.0.1:port */
  readonly url: string;
  /** Stops (if still running) and starts a fresh, empty server on the same port. */
  restart(): Promise<void>;
}

/** Starts a throw-away redis-server on a free loopback port, without persistence, and waits until it answers. */
export async function startRedis(options: RedisServerOptions = {}): Promise<TestRedisServer> {
  const binary = findBinary('redis-server');
  return retryOnPortTaken(async () => {
    const port = await freeTestPort();
    return wrap(binary, port, options, await launch(binary, port, options));
  });
}

/** The flags every test redis-server runs with: loopback only, no persistence, a temp dir, quiet. */
export function redisServerArgs(port: number, dir: string): string[] {
  return [
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
  ];
}

interface Running {
  server: SpawnedServer;
  dir: string;
}

async function launch(binary: string, port: number, options: RedisServerOptions): Promise<Running> {
  const dir = serverDir('redis');
  try {
    const server = await launchServer({
      what: `redis-server on 127.0.0.1:${port}`,
      binary,
      args: [
        ...redisServerArgs(port, dir),
        ...(options.password ? ['--requirepass', options.password] : []),
        ...(options.extraArgs ?? []),
      ],
      probe: () => pingRedis(port),
      dir,
    });
    return { server, dir };
  } catch (error) {
    removeServerDir(dir);
    throw error;
  }
}

function wrap(binary: string, port: number, options: RedisServerOptions, first: Running): TestRedisServer {
  let current: Running | undefined = first;
  const auth = options.password ? `:${encodeURIComponent(options.password)}@` : '';

  const shutDown = async (): Promise<void> => {
    const running = current;
    current = undefined;
    if (!running) return;
    await retireServer(running.server);
    removeServerDir(running.dir);
  };

  return {
    host: '127.0.0.1',
    port,
    url: `redis://${auth}127.0.0.1:${port}`,
    get pid() {
      return current?.server.pid ?? -1;
    },
    stop: shutDown,
    kill: async (signal?: NodeJS.Signals) => current?.server.kill(signal),
    async restart() {
      await shutDown();
      current = await launch(binary, port, options);
    },
    pause: () => current?.server.pause(),
    resume: () => current?.server.resume(),
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

export interface TestRedisSentinel {
  readonly port: number;
  /** The master name it monitors. */
  readonly masterName: string;
  stop(): Promise<void>;
}

/** Starts a Sentinel (redis-server --sentinel) on a free loopback port that monitors the master on `masterPort`. */
export async function startRedisSentinel(masterPort: number, masterName = 'mymaster'): Promise<TestRedisSentinel> {
  const binary = findBinary('redis-server');
  return retryOnPortTaken(async () => {
    const port = await freeTestPort();
    const dir = serverDir('redis-sentinel');
    // Sentinel rewrites its config file, so it lives in the temp dir.
    const config = join(dir, 'sentinel.conf');
    writeFileSync(
      config,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        'loglevel warning',
        `sentinel monitor ${masterName} 127.0.0.1 ${masterPort} 1`,
        `sentinel down-after-milliseconds ${masterName} 5000`,
      ].join('\n') + '\n',
    );
    let server: SpawnedServer;
    try {
      server = await launchServer({
        what: `redis sentinel on 127.0.0.1:${port}`,
        binary,
        args: [config, '--sentinel'],
        probe: () => pingRedis(port),
        dir,
      });
    } catch (error) {
      removeServerDir(dir);
      throw error;
    }
    return {
      port,
      masterName,
      stop: async () => {
        await retireServer(server);
        removeServerDir(dir);
      },
    };
  });
}
