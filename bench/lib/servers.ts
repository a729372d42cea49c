import { connect } from 'node:net';
import Redis from 'ioredis';
import { startEtcd, TestEtcdServer } from '../../test/support/etcd-server';
import { startRedis, TestRedisServer } from '../../test/support/redis-server';
import { startZooKeeper, TestZooKeeperServer } from '../../test/support/zookeeper-server';
import type { BenchEnv, Store } from '../peers/adapter';

/**
 * Fresh redis-server, etcd and ZooKeeper on free loopback ports (never 6379/2379/2181), with temp data dirs.
 * ZooKeeper fsyncs every write, as in production and as etcd does here; it allows `mntr` for request counts.
 */
export class BenchServers {
  private constructor(
    readonly redis: TestRedisServer,
    readonly etcd: TestEtcdServer,
    readonly zookeeper: TestZooKeeperServer,
    /** For INFO only; the libraries under test use their own connections. */
    private readonly monitor: Redis,
  ) {}

  static async start(): Promise<BenchServers> {
    const started: { stop(): Promise<unknown> }[] = [];
    try {
      const redis = await startRedis();
      started.push(redis);
      const etcd = await startEtcd();
      started.push(etcd);
      const zookeeper = await startZooKeeper({ forceSync: true, fourLetterWords: ['mntr'] });
      return new BenchServers(redis, etcd, zookeeper, new Redis(redis.url));
    } catch (error) {
      await Promise.allSettled(started.map((server) => server.stop()));
      throw error;
    }
  }

  get env(): BenchEnv {
    return {
      redisUrl: this.redis.url,
      etcdEndpoint: this.etcd.endpoint,
      zookeeperConnectionString: this.zookeeper.connectionString,
    };
  }

  /** Calls per Redis command since start (`INFO commandstats`). Commands run inside Lua scripts count too. */
  async redisCommandCounts(): Promise<Map<string, number>> {
    const text = await this.monitor.info('commandstats');
    const counts = new Map<string, number>();
    for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) counts.set(match[1], Number(match[2]));
    return counts;
  }

  /**
   * Server time in µs that Redis spent on the commands clients sent (`INFO commandstats` usec). A script's
   * EVALSHA/EVAL usec already includes the commands it runs, which commandstats lists again on their own: so
   * when any script ran, only the script commands count; otherwise every command does (our INFO excluded).
   */
  async redisServerUsec(): Promise<{ scripts: number; all: number }> {
    const text = await this.monitor.info('commandstats');
    let scripts = 0;
    let all = 0;
    for (const match of text.matchAll(/^cmdstat_([^:]+):calls=\d+,usec=(\d+)/gm)) {
      const [name, usec] = [match[1], Number(match[2])];
      if (name === 'info') continue;
      all += usec;
      if (name === 'evalsha' || name === 'eval' || name === 'evalsha_ro' || name === 'eval_ro' || name === 'fcall')
        scripts += usec;
    }
    return { scripts, all };
  }

  /** gRPC messages etcd received per method since start (`/metrics`); each keepalive on a stream counts once. */
  async etcdRequestCounts(): Promise<Map<string, number>> {
    const response = await fetch(`${this.etcd.endpoint}/metrics`);
    const text = await response.text();
    const counts = new Map<string, number>();
    for (const match of text.matchAll(/^grpc_server_msg_received_total\{grpc_method="([^"]+)"[^}]*\} (\S+)$/gm)) {
      counts.set(match[1], (counts.get(match[1]) ?? 0) + Number(match[2]));
    }
    // Streams opened: our keepalives open one per renewal, etcd3's Lease keeps one open per lease.
    for (const match of text.matchAll(/^grpc_server_started_total\{grpc_method="LeaseKeepAlive"[^}]*\} (\S+)$/gm)) {
      counts.set('LeaseKeepAlive streams', Number(match[1]));
    }
    return counts;
  }

  /**
   * Raft proposals etcd committed since start (`etcd_server_proposals_committed_total`): every write (put, delete,
   * txn with a write, lease grant and revoke) is one, each fsynced. Keepalives and reads are not.
   */
  async etcdRaftWrites(): Promise<number> {
    const text = await (await fetch(`${this.etcd.endpoint}/metrics`)).text();
    const match = /^etcd_server_proposals_committed_total (\S+)$/m.exec(text);
    return match ? Number(match[1]) : NaN;
  }

  /** Requests ZooKeeper received since start (`mntr` zk_packets_received; a session's pings count too). */
  async zookeeperRequestCounts(): Promise<Map<string, number>> {
    const [host, port] = this.zookeeper.connectionString.split(':');
    const text = await fourLetterWord(host, Number(port), 'mntr');
    const match = /^zk_packets_received\s+(\d+)$/m.exec(text);
    return new Map([['packets', match ? Number(match[1]) : NaN]]);
  }

  /** The server-side call counts of `store`, for per-operation and per-second deltas. */
  counts(store: Store): Promise<Map<string, number>> {
    if (store === 'redis') return this.redisCommandCounts();
    return store === 'etcd' ? this.etcdRequestCounts() : this.zookeeperRequestCounts();
  }

  async stop(): Promise<void> {
    this.monitor.disconnect();
    await Promise.allSettled([this.redis.stop(), this.etcd.stop(), this.zookeeper.stop()]);
  }
}

/** Sends a four-letter word to ZooKeeper and resolves what it answers before closing the connection. */
function fourLetterWord(host: string, port: number, word: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port }, () => socket.end(word));
    const chunks: Buffer[] = [];
    socket.setTimeout(5_000, () => socket.destroy(new Error(`no answer to ${word} within 5 s`)));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/** Per-command difference of two count snapshots, ignoring our own INFO calls. */
export function countDelta(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const delta = new Map<string, number>();
  for (const [name, value] of after) {
    if (name === 'info') continue;
    const difference = value - (before.get(name) ?? 0);
    if (difference > 0) delta.set(name, difference);
  }
  return delta;
}

export function total(counts: Map<string, number>, exclude: (name: string) => boolean = () => false): number {
  let sum = 0;
  for (const [name, value] of counts) if (!exclude(name)) sum += value;
  return sum;
}
