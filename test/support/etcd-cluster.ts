import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { etcdHealthy, etcdMemberArgs, type EtcdMemberPlan } from './etcd-server';
import { freeTestPorts } from './free-port';
import {
  findBinary,
  launchServer,
  removeServerDir,
  retireServer,
  retryOnPortTaken,
  serverDir,
  SpawnedServer,
} from './server-process';

/** One member of a test cluster. */
export interface EtcdClusterMember {
  readonly name: string;
  /** http://127.0.0.1:<port> */
  readonly endpoint: string;
  readonly port: number;
  readonly peerPort: number;
  /** -1 while it is down. */
  readonly pid: number;
  isRunning(): boolean;
  /** Graceful stop (SIGTERM); the data dir stays for restart(). Idempotent. */
  stop(): Promise<void>;
  /** A crash: SIGKILL by default. The data dir stays for restart(). */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again (after stop/kill) on the same ports and data; resolves once it serves as a member again. */
  restart(): Promise<void>;
}

export interface TestEtcdCluster {
  readonly members: readonly EtcdClusterMember[];
  /** Every member's endpoint, for `new Etcd3({ hosts })` / `new EtcdLockBackend({ hosts })`. */
  readonly endpoints: string[];
  /** Index of the member that leads now (asked of the running members). */
  leader(): Promise<number>;
  /** Resolves once every running member reports a leader. */
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  /** Stops every member and removes the data dirs. Idempotent. */
  stop(): Promise<void>;
}

const START_ATTEMPTS = 4;
/**
 * Faster than etcd's defaults (100/1000) would make a loaded two-core machine hold elections for nothing;
 * these still elect in about a second. The server's minimum lease TTL is 1.5 x election timeout, rounded
 * up to whole seconds: 2 s, the shortest ttl the etcd suites use.
 */
const HEARTBEAT_MS = 100;
const ELECTION_MS = 1_000;
const READY_TIMEOUT_MS = 30_000;

type MemberPlan = EtcdMemberPlan;

/** Starts a `size`-member etcd cluster on free loopback ports with temp data dirs; waits until it has a leader. */
export async function startEtcdCluster(size = 3): Promise<TestEtcdCluster> {
  const binary = findBinary('etcd');
  return retryOnPortTaken(async () => {
    const plans = await planMembers(size);
    const members = plans.map((plan) => clusterMember(binary, plan));
    try {
      // Together: no member is healthy before a quorum has started.
      await Promise.all(members.map((member) => member.restart()));
      return cluster(members, plans);
    } catch (error) {
      await Promise.allSettled(members.map((member) => member.stop()));
      for (const plan of plans) removeServerDir(plan.dir);
      throw error;
    }
  }, START_ATTEMPTS);
}

async function planMembers(size: number): Promise<MemberPlan[]> {
  const ports = await freeTestPorts(size * 2);
  const clusterToken = `ndl-cluster-${randomUUID()}`;
  const initialCluster = Array.from({ length: size }, (_, i) => `m${i}=http://127.0.0.1:${ports[2 * i + 1]}`).join(',');
  return Array.from({ length: size }, (_, i) => ({
    name: `m${i}`,
    port: ports[2 * i],
    peerPort: ports[2 * i + 1],
    dir: serverDir(`etcd-cluster-m${i}`),
    initialCluster,
    clusterToken,
    heartbeatMs: HEARTBEAT_MS,
    electionMs: ELECTION_MS,
  }));
}

function clusterMember(binary: string, plan: MemberPlan): EtcdClusterMember {
  const client = `http://127.0.0.1:${plan.port}`;
  const args = etcdMemberArgs(plan);
  let current: SpawnedServer | undefined;

  const halt = async (signal?: NodeJS.Signals) => {
    const running = current;
    current = undefined;
    if (!running) return;
    if (signal) {
      await running.kill(signal);
      await running.exited;
      running.forget();
    } else {
      await retireServer(running);
    }
  };

  return {
    name: plan.name,
    endpoint: client,
    port: plan.port,
    peerPort: plan.peerPort,
    get pid() {
      return current?.isRunning() ? current.pid : -1;
    },
    isRunning: () => current?.isRunning() ?? false,
    stop: () => halt(),
    kill: (signal: NodeJS.Signals = 'SIGKILL') => halt(signal),
    async restart() {
      await halt();
      // The data dir is removed with the process if this Jest worker exits before stop(); kept across restarts otherwise.
      // Known before it is ready: the other members may fail meanwhile, and startEtcdCluster then stops this one.
      const server = await launchServer({
        what: `etcd member ${plan.name} on ${client}`,
        binary,
        args,
        probe: () => etcdHealthy(plan.port),
        readyTimeoutMs: READY_TIMEOUT_MS,
        dir: plan.dir,
        onSpawn: (spawned) => (current = spawned),
      }).catch((error: unknown) => {
        current = undefined;
        throw error;
      });
      current = server;
    },
  };
}

function cluster(members: EtcdClusterMember[], plans: MemberPlan[]): TestEtcdCluster {
  let stopping: Promise<void> | undefined;
  const running = () => members.filter((member) => member.isRunning());
  return {
    members,
    endpoints: members.map((member) => member.endpoint),
    async leader() {
      const statuses = await Promise.all(
        members.map((member) =>
          member.isRunning() ? memberStatus(member.port).catch(() => undefined) : Promise.resolve(undefined),
        ),
      );
      const leaderId = statuses.find((status) => status && status.leader !== '0')?.leader;
      const index = statuses.findIndex((status) => status !== undefined && status.header.member_id === leaderId);
      if (index < 0) throw new Error('no running member knows a leader');
      return index;
    },
    async waitUntilHealthy(timeoutMs = READY_TIMEOUT_MS) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const health = await Promise.all(running().map((member) => etcdHealthy(member.port).catch(() => false)));
        if (health.length > 0 && health.every(Boolean)) return;
        if (Date.now() > deadline) throw new Error(`the etcd cluster did not become healthy within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50).unref());
      }
    },
    stop() {
      stopping ??= (async () => {
        await Promise.allSettled(members.map((member) => member.stop()));
        for (const plan of plans) removeServerDir(plan.dir);
      })();
      return stopping;
    },
  };
}

interface MemberStatus {
  header: { member_id: string };
  /** Member id of the leader as this member sees it; '0' when it knows none. */
  leader: string;
}

/** POST /v3/maintenance/status on etcd's JSON gateway. */
function memberStatus(port: number, timeoutMs = 1_000): Promise<MemberStatus> {
  return new Promise((resolve, reject) => {
    const call = request(
      { host: '127.0.0.1', port, path: '/v3/maintenance/status', method: 'POST', timeout: timeoutMs, agent: false },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => {
          try {
            const parsed = JSON.parse(body) as Partial<MemberStatus>;
            resolve({
              header: { member_id: String(parsed.header?.member_id ?? '') },
              leader: String(parsed.leader ?? '0'),
            });
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    call.once('timeout', () => call.destroy(new Error('status request timed out')));
    call.once('error', reject);
    call.end('{}');
  });
}
