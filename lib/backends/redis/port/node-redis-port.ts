import { raceAbort, timeoutSignal } from '../../../utils/abort';
import { describeAddress, type NodeRedisLockClient } from '../redis-client';
import {
  normaliseReply,
  type RedisPort,
  type ScriptArgument,
  type ShaCall,
  type SubscriberConnection,
} from './redis-port';

/** What we use of node-redis beyond the public NodeRedisLockClient type (the app never needs to know it). */
interface NodeRedisConnection {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  sendCommand(args: readonly string[]): Promise<unknown>;
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  unsubscribe(channels: string[], listener: (message: string, channel: string) => void): Promise<unknown>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  off(event: string, listener: (...args: unknown[]) => void): unknown;
  /** node-redis 5 and 6; `quit` is the older name. */
  close?(): Promise<unknown>;
  quit?(): Promise<unknown>;
  destroy(): void;
}

/** How our subscriber connections show up in CLIENT LIST (CLIENT SETNAME), as with ioredis. */
export const NODE_REDIS_SUBSCRIBER_NAME = 'nest-distributed-lock:subscriber';

/** How long close() may take, then the socket is dropped. */
const CLOSE_TIMEOUT_MS = 1_000;

/**
 * The port over a node-redis client (`createClient()`). Every command goes through `sendCommand` with the raw
 * arguments, which node-redis 5 and 6 keep stable (the typed helpers such as `evalSha` changed shape between
 * majors). Replies are normalised (RESP3: booleans, doubles, [member, score] pairs) to what RESP2 gives.
 *
 * Commands sent while the client reconnects wait in node-redis' offline queue, as with ioredis: the caller's
 * deadline (operationTimeout, Redlock's requestTimeout) bounds them. A closed client fails them at once.
 */
export class NodeRedisPort implements RedisPort {
  readonly address: string;
  readonly isCluster = false;
  private everReady: boolean;
  /** Set while a client we created connects: commands wait for it (see the constructor). */
  private connecting?: Promise<unknown>;
  /** A client we created and have not connected yet: the first command connects it. */
  private connectFirst?: () => Promise<unknown>;

  /**
   * `connect`: connects a client the backend created itself, called at the first command. node-redis sends the
   * commands queued during a connect right after the handshake even when its AUTH failed, so they would run as
   * the `default` user: a wrong password could then take locks. Our commands wait for the connect instead,
   * within the caller's deadline. (A client the app passes in is its to connect; the docs say to await
   * `connect()`.)
   */
  constructor(
    readonly client: NodeRedisLockClient,
    connect?: () => Promise<unknown>,
  ) {
    const socket = (client.options as { socket?: object } | undefined)?.socket ?? {};
    this.address = describeAddress(socket);
    this.everReady = client.isReady;
    // So an outage after the first connect reads 'reconnecting', also for a client passed in while connecting.
    if (!this.everReady) (client as unknown as NodeRedisConnection).once('ready', () => (this.everReady = true));
    this.connectFirst = connect;
  }

  status(): string {
    if (this.client.isReady) {
      this.everReady = true;
      return 'ready';
    }
    if (this.connectFirst) return 'wait';
    if (!this.client.isOpen) return 'end';
    return this.everReady ? 'reconnecting' : 'connecting';
  }

  evalsha(sha1: string, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown> {
    return this.send(scriptCommand('EVALSHA', sha1, keys, args));
  }

  eval(source: string, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown> {
    return this.send(scriptCommand('EVAL', source, keys, args));
  }

  /**
   * node-redis writes the commands of one tick to the socket together, so these separate calls share one round
   * trip, like an ioredis pipeline; each keeps its own reply or error.
   */
  evalshaMany(calls: readonly ShaCall[]): Promise<[Error | null, unknown][]> {
    return sendEach(calls, (call) => this.evalsha(call.sha1, call.keys, call.args));
  }

  nodeOfSlot(): string | undefined {
    return undefined;
  }

  async get(key: string): Promise<string | null> {
    return (await this.send(['GET', key])) as string | null;
  }

  async pttl(key: string): Promise<number> {
    return Number(await this.send(['PTTL', key]));
  }

  async zrangeWithScores(key: string): Promise<string[]> {
    const reply = (await this.send(['ZRANGE', key, '0', '-1', 'WITHSCORES'])) as unknown[];
    return reply.flatMap((item) => (Array.isArray(item) ? item.map(String) : [String(item)]));
  }

  async lrange(key: string, start: number, stop: number): Promise<string[]> {
    return ((await this.send(['LRANGE', key, String(start), String(stop)])) as unknown[]).map(String);
  }

  async time(): Promise<[string, string]> {
    const [seconds, micros] = (await this.send(['TIME'])) as unknown[];
    return [String(seconds), String(micros)];
  }

  duplicateForSubscriber(): SubscriberConnection {
    return new NodeRedisSubscriber(this.client.duplicate({ name: NODE_REDIS_SUBSCRIBER_NAME }) as NodeRedisConnection);
  }

  private send(args: readonly string[]): Promise<unknown> {
    if (this.connectFirst) this.beginConnect(this.connectFirst);
    if (this.connecting) return this.connecting.then(() => this.client.sendCommand(args)).then(normaliseReply);
    return this.client.sendCommand(args).then(normaliseReply);
  }

  private beginConnect(connect: () => Promise<unknown>): void {
    this.connectFirst = undefined;
    const connecting = connect();
    this.connecting = connecting;
    const done = () => (this.connecting = undefined);
    connecting.then(done, done);
  }
}

/** Each call on its own, all in one tick (so node-redis writes them together), each with its own reply or error. */
export function sendEach(
  calls: readonly ShaCall[],
  send: (call: ShaCall) => Promise<unknown>,
): Promise<[Error | null, unknown][]> {
  return Promise.all(
    calls.map((call) =>
      send(call).then(
        (reply): [Error | null, unknown] => [null, reply],
        (error: unknown): [Error | null, unknown] => [error instanceof Error ? error : new Error(String(error)), null],
      ),
    ),
  );
}

/** EVAL or EVALSHA as raw arguments: (command, script, numkeys, ...keys, ...args). */
export function scriptCommand(
  command: string,
  script: string,
  keys: readonly string[],
  args: readonly ScriptArgument[],
): string[] {
  const sent = new Array<string>(3 + keys.length + args.length);
  sent[0] = command;
  sent[1] = script;
  sent[2] = String(keys.length);
  for (let index = 0; index < keys.length; index++) sent[3 + index] = keys[index];
  for (let index = 0; index < args.length; index++) sent[3 + keys.length + index] = String(args[index]);
  return sent;
}

/**
 * node-redis needs its own connection for pub/sub (`duplicate()` + `connect()`): a client in subscriber mode
 * takes no other commands (RESP2). It re-subscribes by itself after a reconnect; messages in the gap are
 * covered by the waiters' re-checks.
 */
class NodeRedisSubscriber implements SubscriberConnection {
  private listener?: (channel: string, message: string) => void;
  /** The one node-redis listener of every channel: see unsubscribe(). */
  private readonly dispatch = (message: string, channel: string) => this.listener?.(String(channel), String(message));
  private readonly connected: Promise<unknown>;
  private closed = false;

  constructor(private readonly connection: NodeRedisConnection) {
    // Its failures surface through SUBSCRIBE replies and the waiters' re-checks; without a listener node-redis throws.
    connection.on('error', () => undefined);
    this.connected = connection.connect();
    this.connected.catch(() => undefined);
  }

  get status(): string {
    return this.closed || !this.connection.isOpen ? 'end' : this.connection.isReady ? 'ready' : 'reconnecting';
  }

  onMessage(listener: (channel: string, message: string) => void): void {
    this.listener = listener;
  }

  async subscribe(channel: string): Promise<unknown> {
    await this.connected;
    return this.connection.subscribe(channel, this.dispatch);
  }

  /**
   * With its listener, so node-redis marks the channel as unsubscribing: a SUBSCRIBE of it before the UNSUBSCRIBE
   * is answered then goes to the server. Without one, node-redis takes that SUBSCRIBE as already done, and the
   * UNSUBSCRIBE's reply then drops the new listener too: the waiter missed every release (seen on hot keys).
   */
  unsubscribe(...channels: string[]): Promise<unknown> {
    return this.connection.unsubscribe(channels, this.dispatch);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await closeNodeRedis(this.connection);
  }
}

/** Closes a node-redis client we created ourselves (from `{ url }`): gracefully when connected, bounded. */
export function closeNodeRedisClient(client: NodeRedisLockClient): Promise<void> {
  return closeNodeRedis(client as unknown as NodeRedisConnection);
}

async function closeNodeRedis(connection: NodeRedisConnection): Promise<void> {
  const deadline = timeoutSignal(CLOSE_TIMEOUT_MS, () => new Error('close timed out'));
  try {
    if (connection.isOpen && !connection.isReady) await connectAttemptSettled(connection, deadline.signal);
    if (connection.isReady) {
      const quit = connection.close ? connection.close() : connection.quit?.();
      await raceAbort(Promise.resolve(quit), deadline.signal, () => deadline.signal.reason).catch(() => undefined);
    }
  } finally {
    deadline.dispose();
    if (connection.isOpen) connection.destroy();
  }
}

/**
 * Resolves when a connecting client's attempt has ended ('ready' or 'error'), or on `signal`. node-redis 5's
 * destroy() drops only a socket the client already has: called while a connect is under way, it leaves the
 * socket being opened to connect afterwards and stay open for good, and the app's process never exits (an app
 * closed right after it started). After 'error' the client sleeps before its next try, with no socket.
 */
function connectAttemptSettled(connection: NodeRedisConnection, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const settle = () => {
      connection.off('ready', settle);
      connection.off('error', settle);
      signal.removeEventListener('abort', settle);
      resolve();
    };
    connection.once('ready', settle);
    connection.once('error', settle);
    signal.addEventListener('abort', settle, { once: true });
  });
}
