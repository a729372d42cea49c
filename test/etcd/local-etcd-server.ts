import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A throw-away single-member etcd for the etcd backend's own suites (they compact, pause and restart it,
 * so they do not share the run's server). Kept local and minimal; test/support has the shared harness.
 */
export interface LocalEtcdServer {
  /** http://127.0.0.1:<port> */
  readonly endpoint: string;
  /** SIGSTOP: the sockets stay open but nothing answers. */
  pause(): void;
  resume(): void;
  /** Stops and starts again on the same ports and data dir: keys and leases survive. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 20_000;
const RESERVED = new Set([2379, 2380]);

export async function startLocalEtcd(): Promise<LocalEtcdServer> {
  const dir = await mkdtemp(join(tmpdir(), 'etcd-backend-spec-'));
  for (let attempt = 1; ; attempt++) {
    const port = await unusedPort();
    const peerPort = await unusedPort();
    try {
      let child = await launch(port, peerPort, dir);
      return {
        endpoint: `http://127.0.0.1:${port}`,
        pause: () => child.kill('SIGSTOP'),
        resume: () => child.kill('SIGCONT'),
        async restart() {
          await terminate(child);
          child = await launch(port, peerPort, dir);
        },
        async stop() {
          await terminate(child);
          await rm(dir, { recursive: true, force: true });
        },
      };
    } catch (error) {
      // Most likely a port taken between our probe and etcd's bind: try others.
      if (attempt >= 3) {
        await rm(dir, { recursive: true, force: true });
        throw error;
      }
      await rm(join(dir, 'member'), { recursive: true, force: true });
    }
  }
}

async function unusedPort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() =>
          typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
        );
      });
    });
    if (!RESERVED.has(port)) return port;
  }
}

async function launch(port: number, peerPort: number, dir: string): Promise<ChildProcess> {
  const client = `http://127.0.0.1:${port}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const child = spawn(
    'etcd',
    [
      '--name',
      't',
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
      `t=${peer}`,
      '--heartbeat-interval',
      '50',
      '--election-timeout',
      '500',
      '--log-level',
      'error',
      '--logger',
      'zap',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`etcd on ${client} exited during start-up`);
    if (await healthy(port)) return child;
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 50).unref())]);
  }
  await terminate(child);
  throw new Error(`etcd on ${client} did not become healthy within ${START_TIMEOUT_MS} ms`);
}

function healthy(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const request = get({ host: '127.0.0.1', port, path: '/health', timeout: 1_000, agent: false }, (response) => {
      let body = '';
      response.on('data', (chunk) => (body += chunk));
      response.on('end', () => resolve(response.statusCode === 200 && body.includes('"health":"true"')));
    });
    request.once('timeout', () => request.destroy());
    request.once('error', () => resolve(false));
  });
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGCONT');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  timer.unref();
  await exited;
  clearTimeout(timer);
}
