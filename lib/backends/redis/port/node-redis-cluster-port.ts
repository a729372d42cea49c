import { raceAbort, timeoutSignal } from '../../../utils/abort';
import { describeAddress, describeStartupNode, type NodeRedisClusterLockClient } from '../redis-client';
import { NODE_REDIS_SUBSCRIBER_NAME, sendEach, scriptCommand } from './node-redis-port';
import {
  normaliseReply,
  type RedisPort,
  type ScriptArgument,
  type ShaCall,
  type SubscriberConnection,
} from './redis-port';

/** What we use of a node-redis cluster beyond the public NodeRedisClusterLockClient type. */
interface NodeRedisCluster extends NodeRedisClusterLockClient {
  readonly _options?: { rootNodes?: readonly unknown[]; defaults?: object };
  /** node-redis 6: set once discovery finished; its masters are listed a moment before, unusable until then. */
  readonly isReady?: boolean;
  /** Per slot: the shard serving it, once discovered. */
  readonly slots: readonly ({ readonly master?: { readonly address?: string } } | undefined)[];
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  unsubscribe(channels: string[], listener: (message: string, channel: string) => void): Promise<unknown>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  close(): Promise<unknown>;
  destroy(): void;
}

/** How often a command sent while the cluster still discovers its slots looks again (only then). */
const DISCOVERY_POLL_MS = 20;
/** As ioredis: a command answered TRYAGAIN or CLUSTERDOWN goes again after 100 ms, up to 16 times. */
const TRY_AGAIN_DELAY_MS = 100;
const MAX_TRY_AGAIN = 16;
/** How long close() may take, then the connections are dropped. */
const CLOSE_TIMEOUT_MS = 1_000;

/**
 * The port over a node-redis cluster (`createCluster()`). Each command goes through `sendCommand(firstKey, ...)`:
 * node-redis routes it to the master of the first key's slot and follows MOVED/ASK itself. Every key of one of our
 * scripts shares one hash tag, so the first key's slot is the script's slot (no CROSSSLOT). EVALSHA answered
 * NOSCRIPT is retried as EVAL on the same node, so each master loads a script on its first use (RedisScript).
 *
 * A command for a slot whose master is down waits in that node's offline queue; the caller's deadline bounds it,
 * as for the single client. A cluster not connected (or closed) fails commands at once.
 */
export class NodeRedisClusterPort implements RedisPort {
  readonly address: string;
  readonly isCluster = true;
  private readonly cluster: NodeRedisCluster;
  private discovery?: Promise<void>;

  constructor(client: NodeRedisClusterLockClient) {
    this.cluster = client as NodeRedisCluster;
    const roots = this.cluster._options?.rootNodes ?? [];
    const shown = roots.map(describeRootNode);
    this.address = `cluster(${shown.join(',') || 'unknown nodes'})`;
  }

  status(): string {
    if (!this.cluster.isOpen) return 'end';
    return this.discovered() ? 'ready' : 'connecting';
  }

  /** Whether commands can be routed: node-redis 6 says so (isReady); 5 has discovered once it lists masters. */
  private discovered(): boolean {
    return this.cluster.isReady ?? this.cluster.masters.length > 0;
  }

  evalsha(sha1: string, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown> {
    return this.send(keys[0], scriptCommand('EVALSHA', sha1, keys, args));
  }

  eval(source: string, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown> {
    return this.send(keys[0], scriptCommand('EVAL', source, keys, args));
  }

  /**
   * script-batch groups a batch by master; each node's client writes the commands of one tick together, so a
   * group is one round trip to its node, like one ioredis pipeline per node. Each call keeps its own reply.
   */
  evalshaMany(calls: readonly ShaCall[]): Promise<[Error | null, unknown][]> {
    return sendEach(calls, (call) => this.evalsha(call.sha1, call.keys, call.args));
  }

  nodeOfSlot(slot: number): string | undefined {
    return this.cluster.slots[slot]?.master?.address;
  }

  async get(key: string): Promise<string | null> {
    return (await this.send(key, ['GET', key])) as string | null;
  }

  async pttl(key: string): Promise<number> {
    return Number(await this.send(key, ['PTTL', key]));
  }

  async zrangeWithScores(key: string): Promise<string[]> {
    const reply = (await this.send(key, ['ZRANGE', key, '0', '-1', 'WITHSCORES'])) as unknown[];
    return reply.flatMap((item) => (Array.isArray(item) ? item.map(String) : [String(item)]));
  }

  async lrange(key: string, start: number, stop: number): Promise<string[]> {
    return ((await this.send(key, ['LRANGE', key, String(start), String(stop)])) as unknown[]).map(String);
  }

  async time(): Promise<[string, string]> {
    const [seconds, micros] = (await this.send(undefined, ['TIME'])) as unknown[];
    return [String(seconds), String(micros)];
  }

  /**
   * A copy of the cluster that opens connections only as it needs them (`minimizeConnections`): here one, to the
   * node node-redis picks for SUBSCRIBE. Like the ioredis Cluster path, we subscribe with SUBSCRIBE, not SSUBSCRIBE:
   * our scripts PUBLISH, which reaches every node's subscribers over the cluster bus.
   */
  duplicateForSubscriber(): SubscriberConnection {
    const defaults = this.cluster._options?.defaults;
    const copy = this.cluster.duplicate({
      minimizeConnections: true,
      defaults: { ...defaults, name: NODE_REDIS_SUBSCRIBER_NAME },
    }) as NodeRedisCluster;
    return new NodeRedisClusterSubscriber(copy);
  }

  private send(firstKey: string | undefined, args: string[], tries = 0): Promise<unknown> {
    if (!this.discovered()) return this.afterDiscovery().then(() => this.send(firstKey, args));
    return this.cluster.sendCommand(firstKey, false, args).then(normaliseReply, async (error: unknown) => {
      // A slot in migration answers a script whose keys are partly there TRYAGAIN, and a cluster that lost a master
      // CLUSTERDOWN; neither ran it. ioredis tries again by itself (retryDelayOnTryAgain); node-redis does not.
      if (tries >= MAX_TRY_AGAIN || !(error instanceof Error) || !/^(TRYAGAIN|CLUSTERDOWN) /.test(error.message)) {
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, TRY_AGAIN_DELAY_MS));
      return this.send(firstKey, args, tries + 1);
    });
  }

  /**
   * node-redis cannot route a command before connect() has read the slots (it would fail with a TypeError): a
   * command sent meanwhile waits for that (the caller's deadline bounds it), one shared poll for all of them.
   */
  private afterDiscovery(): Promise<void> {
    if (!this.cluster.isOpen) {
      return Promise.reject(
        new Error('the node-redis cluster client is not connected (call connect() before use) or was closed'),
      );
    }
    return (this.discovery ??= new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (!this.discovered() && this.cluster.isOpen) return;
        clearInterval(timer);
        this.discovery = undefined;
        if (this.discovered()) resolve();
        else reject(new Error('the node-redis cluster client could not reach any of its root nodes'));
      }, DISCOVERY_POLL_MS);
      timer.unref();
    }));
  }
}

/** A root node of `createCluster({ rootNodes })`: `{ url }` (its credentials dropped) or `{ socket: { host, port } }`. */
function describeRootNode(node: unknown): string {
  const { url, socket } = (node ?? {}) as { url?: unknown; socket?: unknown };
  if (typeof url === 'string') return describeStartupNode(url);
  if (typeof socket === 'object' && socket !== null) return describeAddress(socket);
  return 'unknown node';
}

/**
 * Subscribed for as long as the subscriber lives, and never published to: node-redis drops a cluster's subscriber
 * connection when its last channel is unsubscribed, so without it every waiter after an idle moment would pay a
 * new connection (TCP, HELLO/AUTH) before it could wait. ioredis keeps its subscriber connection open anyway.
 */
const KEEP_OPEN_CHANNEL = 'nest-distributed-lock:subscriber:keep-open';

/**
 * Our duplicate of the app's cluster, used for SUBSCRIBE only. node-redis re-subscribes by itself after its
 * subscriber connection reconnects; messages in the gap are covered by the waiters' re-checks.
 */
class NodeRedisClusterSubscriber implements SubscriberConnection {
  private listener?: (channel: string, message: string) => void;
  /** The one node-redis listener of every channel, passed to unsubscribe too (see NodeRedisSubscriber). */
  private readonly dispatch = (message: string, channel: string) => this.listener?.(String(channel), String(message));
  private readonly connected: Promise<unknown>;
  private closed = false;

  constructor(private readonly cluster: NodeRedisCluster) {
    // Failures surface through SUBSCRIBE replies and the waiters' re-checks; without a listener node-redis throws.
    cluster.on('error', () => undefined);
    // Not after close(): that subscription would open a connection on a cluster we already closed.
    this.connected = cluster
      .connect()
      .then(() => (this.closed ? undefined : cluster.subscribe(KEEP_OPEN_CHANNEL, () => undefined)));
    this.connected.catch(() => undefined);
  }

  get status(): string {
    return this.closed || !this.cluster.isOpen ? 'end' : 'ready';
  }

  onMessage(listener: (channel: string, message: string) => void): void {
    this.listener = listener;
  }

  async subscribe(channel: string): Promise<unknown> {
    await this.connected;
    return this.cluster.subscribe(channel, this.dispatch);
  }

  unsubscribe(...channels: string[]): Promise<unknown> {
    return this.cluster.unsubscribe(channels, this.dispatch);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const deadline = timeoutSignal(CLOSE_TIMEOUT_MS, () => new Error('close timed out'));
    try {
      // node-redis goes on connecting to the masters after a close() during its discovery: let that finish first.
      await raceAbort(this.connected, deadline.signal, () => deadline.signal.reason).catch(() => undefined);
      if (this.cluster.isOpen) {
        await raceAbort(this.cluster.close(), deadline.signal, () => deadline.signal.reason).catch(() => undefined);
      }
    } finally {
      deadline.dispose();
      if (this.cluster.isOpen) this.cluster.destroy();
    }
  }
}
