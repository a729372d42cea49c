import { get } from 'node:http';
import { freeTestPorts } from './free-port';
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

export interface TestEtcdServer extends ServerControls {
  /** http://127.0.0.1:<port>, what `new Etcd3({ hosts })` takes. */
  readonly endpoint: string;
  readonly peerPort: number;
  /** Stops (if still running) and starts again on the same ports with the same data: keys and leases survive. */
  restart(): Promise<void>;
}

const NAME = 'ndl-test';

/**
 * Starts a single-member etcd on free loopback ports with a temp data dir, and waits until /health is true.
 * Short heartbeat/election timings make start-up fast; they also lower the server's minimum lease TTL to 1 s.
 */
export async function startEtcd(): Promise<TestEtcdServer> {
  const binary = findBinary('etcd');
  return retryOnPortTaken(async () => {
    const [port, peerPort] = await freeTestPorts(2);
    const dir = serverDir('etcd');
    try {
      const server = await launch(binary, port, peerPort, dir);
      return wrap(binary, port, peerPort, dir, server);
    } catch (error) {
      removeServerDir(dir);
      throw error;
    }
  });
}

export interface EtcdMemberPlan {
  readonly name: string;
  readonly port: number;
  readonly peerPort: number;
  readonly dir: string;
  /** `name=http://127.0.0.1:peerPort,...`: every member of the cluster, this one included. */
  readonly initialCluster: string;
  readonly heartbeatMs: number;
  readonly electionMs: number;
  readonly clusterToken?: string;
  /** Clients over TLS only (https://), with this certificate; peers stay on plain HTTP on loopback. */
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
}

/**
 * The flags of one test etcd member. With a data dir from an earlier start, etcd ignores the --initial-* flags
 * and rejoins as itself, so the same flags serve a restart.
 */
export function etcdMemberArgs(plan: EtcdMemberPlan): string[] {
  const client = `${plan.tls ? 'https' : 'http'}://127.0.0.1:${plan.port}`;
  const peer = `http://127.0.0.1:${plan.peerPort}`;
  return [
    '--name',
    plan.name,
    '--data-dir',
    plan.dir,
    '--listen-client-urls',
    client,
    '--advertise-client-urls',
    client,
    '--listen-peer-urls',
    peer,
    '--initial-advertise-peer-urls',
    peer,
    '--initial-cluster',
    plan.initialCluster,
    ...(plan.clusterToken ? ['--initial-cluster-token', plan.clusterToken] : []),
    '--initial-cluster-state',
    'new',
    ...(plan.tls ? ['--cert-file', plan.tls.certFile, '--key-file', plan.tls.keyFile] : []),
    '--heartbeat-interval',
    String(plan.heartbeatMs),
    '--election-timeout',
    String(plan.electionMs),
    '--logger',
    'zap',
    '--log-level',
    'error',
  ];
}

function launch(binary: string, port: number, peerPort: number, dir: string): Promise<SpawnedServer> {
  return launchServer({
    what: `etcd on http://127.0.0.1:${port}`,
    binary,
    args: etcdMemberArgs({
      name: NAME,
      port,
      peerPort,
      dir,
      initialCluster: `${NAME}=http://127.0.0.1:${peerPort}`,
      heartbeatMs: 50,
      electionMs: 500,
    }),
    probe: () => etcdHealthy(port),
    dir,
  });
}

function wrap(binary: string, port: number, peerPort: number, dir: string, first: SpawnedServer): TestEtcdServer {
  let current: SpawnedServer | undefined = first;
  let stopped = false;

  const halt = async (): Promise<void> => {
    const running = current;
    current = undefined;
    await retireServer(running);
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
      removeServerDir(dir);
    },
    kill: async (signal?: NodeJS.Signals) => current?.kill(signal),
    async restart() {
      if (stopped) throw new Error('etcd was stopped for good; start a new one');
      await halt();
      current = await launch(binary, port, peerPort, dir);
    },
    pause: () => current?.pause(),
    resume: () => current?.resume(),
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
