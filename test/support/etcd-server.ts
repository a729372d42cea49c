import { mkdtempSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeTestPorts } from './free-port';
import {
  findBinary,
  ServerExitedError,
  SpawnedServer,
  spawnServer,
  stopServer,
  waitUntilReady,
} from './server-process';

export interface TestEtcdServer {
  /** http://127.0.0.1:<port>, what `new Etcd3({ hosts })` takes. */
  readonly endpoint: string;
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly peerPort: number;
  readonly pid: number;
  /** Graceful stop; removes the data dir. Idempotent. */
  stop(): Promise<void>;
  /** Sends a signal (SIGKILL to simulate a crash) and waits for the exit when the signal is fatal. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Stops (if still running) and starts again on the same ports with the same data: keys and leases survive. */
  restart(): Promise<void>;
  /** SIGSTOP: the server keeps its sockets but answers nothing. */
  pause(): void;
  resume(): void;
}

const START_ATTEMPTS = 5;
const NAME = 'ndl-test';

/**
 * Starts a single-member etcd on free loopback ports with a temp data dir, and waits until /health is true.
 * Short heartbeat/election timings make start-up fast; they also lower the server's minimum lease TTL to 1 s.
 */
export async function startEtcd(): Promise<TestEtcdServer> {
  const binary = findBinary('etcd');
  for (let attempt = 1; ; attempt++) {
    const [port, peerPort] = await freeTestPorts(2);
    const dir = mkdtempSync(join(tmpdir(), 'ndl-etcd-'));
    try {
      const server = await launch(binary, port, peerPort, dir);
      return wrap(binary, port, peerPort, dir, server);
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      if (error instanceof ServerExitedError && error.portTaken && attempt < START_ATTEMPTS) continue;
      throw error;
    }
  }
}

async function launch(binary: string, port: number, peerPort: number, dir: string): Promise<SpawnedServer> {
  const client = `http://127.0.0.1:${port}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const args = [
    '--name',
    NAME,
    '--data-dir',
    dir,
    '--listen-client-urls',
    client,
    '--advertise-client-urls',
    client,
    '--listen-peer-urls',
    peer,
    '--initial-advertise-peer-urls',
    peer,
    '--initial-cluster',
    `${NAME}=${peer}`,
    '--initial-cluster-state',
    'new',
    '--heartbeat-interval',
    '50',
    '--election-timeout',
    '500',
    '--logger',
    'zap',
    '--log-level',
    'error',
  ];
  const server = spawnServer(binary, args);
  server.ownTempDir(dir);
  try {
    await waitUntilReady(server, `etcd on ${client}`, () => etcdHealthy(port));
  } catch (error) {
    await stopServer(server);
    server.forget();
    throw error;
  }
  return server;
}

function wrap(binary: string, port: number, peerPort: number, dir: string, first: SpawnedServer): TestEtcdServer {
  let current: SpawnedServer | undefined = first;
  let stopped = false;

  const halt = async (): Promise<void> => {
    const running = current;
    current = undefined;
    if (!running) return;
    await stopServer(running);
    running.forget();
  };

  return {
    endpoint: `http://127.0.0.1:${port}`,
    host: '127.0.0.1',
    port,
    peerPort,
    get pid() {
      return current?.pid ?? -1;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (!current?.isRunning()) return;
      current.child.kill(signal);
      if (signal === 'SIGKILL' || signal === 'SIGTERM' || signal === 'SIGINT') await current.exited;
    },
    async restart() {
      if (stopped) throw new Error('etcd was stopped for good; start a new one');
      await halt();
      current = await launch(binary, port, peerPort, dir);
    },
    pause() {
      current?.child.kill('SIGSTOP');
    },
    resume() {
      current?.child.kill('SIGCONT');
    },
  };
}

/** GET /health; true once the member has a leader and serves requests. */
export function etcdHealthy(port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const request = get({ host: '127.0.0.1', port, path: '/health', timeout: timeoutMs, agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => {
        try {
          resolve(response.statusCode === 200 && JSON.parse(body).health === 'true');
        } catch {
          resolve(false);
        }
      });
    });
    request.once('timeout', () => request.destroy(new Error('health check timed out')));
    request.once('error', reject);
  });
}
