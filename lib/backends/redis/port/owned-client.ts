import { isPackageInstalled, loadOptionalPackage } from '../../../utils/optional-package';
import type { IoRedisLockClient, NodeRedisLockClient, RedisConnectionOptions } from '../redis-client';
import { closeConnection, IoRedisPort, OWNED_DISCONNECT_TIMEOUT_MS } from './ioredis-port';
import { closeNodeRedisClient, NodeRedisPort } from './node-redis-port';
import type { RedisPort } from './redis-port';

/** The npm package the backend creates its own client with: `ioredis`, or `redis` (node-redis). */
export type RedisClientPackage = 'ioredis' | 'redis';

const FEATURE = 'The Redis backend';

/**
 * ioredis when it is installed, so apps that passed `{ url }` before node-redis was supported keep the same
 * client, options and behaviour; node-redis when only `redis` is installed. With neither, the error names
 * ioredis (the package the docs install).
 */
export function defaultClientPackage(): RedisClientPackage {
  if (!isPackageInstalled('ioredis') && isPackageInstalled('redis')) return 'redis';
  return 'ioredis';
}

/** A client the backend creates (and closes) from `{ url }` or `{ redisOptions }`. */
export function createOwnedPort(
  options: { url?: string; redisOptions?: RedisConnectionOptions; clientPackage?: RedisClientPackage },
  onError: (error: Error) => void,
): { port: RedisPort; close: () => Promise<void> } {
  const clientPackage = options.clientPackage ?? defaultClientPackage();
  if (clientPackage === 'redis') return createNodeRedis(options, onError);
  if (clientPackage !== 'ioredis') {
    throw new TypeError(
      `RedisLockBackend: clientPackage must be 'ioredis' or 'redis', got ${JSON.stringify(clientPackage)}.`,
    );
  }
  const ioredis = loadOptionalPackage<Partial<typeof import('ioredis')>>('ioredis', FEATURE);
  // Before 5.2.5, ioredis exports the client class as the module itself (and as `default`), not as `Redis`.
  const Redis = (ioredis.Redis ?? ioredis.default)!;
  // Connects at the first command: a backend built but never used (replaced in a test with overrideProvider) opens
  // no socket that would keep the process alive. The app's own disconnectTimeout and lazyConnect, if set, win.
  const redisOptions = { disconnectTimeout: OWNED_DISCONNECT_TIMEOUT_MS, lazyConnect: true, ...options.redisOptions };
  const created = options.url !== undefined ? new Redis(options.url, redisOptions) : new Redis(redisOptions);
  created.on('error', onError);
  const client = created as unknown as IoRedisLockClient;
  return { port: new IoRedisPort(client), close: () => closeConnection(created) };
}

interface NodeRedisPackage {
  createClient(
    this: void,
    options: object,
  ): NodeRedisLockClient & {
    connect(): Promise<unknown>;
    on(event: string, listener: (error: Error) => void): unknown;
  };
}

/**
 * node-redis from the URL plus `redisOptions`, whose connection fields are spelled the ioredis way (host,
 * port, path, db) and mapped to node-redis' (socket.host, socket.port, socket.path, database); the other
 * fields go to createClient as they are (e.g. `RESP: 3`). Connected at the first command, which waits for the
 * connect (see NodeRedisPort); a backend never used opens nothing.
 */
function createNodeRedis(
  options: { url?: string; redisOptions?: RedisConnectionOptions },
  onError: (error: Error) => void,
): { port: RedisPort; close: () => Promise<void> } {
  const { createClient } = loadOptionalPackage<NodeRedisPackage>('redis', FEATURE);
  const { host, port, path, db, ...rest } = options.redisOptions ?? {};
  const socket = {
    ...(host !== undefined && { host }),
    ...(port !== undefined && { port }),
    ...(path !== undefined && { path }),
  };
  const client = createClient({
    ...rest,
    ...(options.url !== undefined && { url: options.url }),
    ...(Object.keys(socket).length > 0 && { socket: { ...(rest.socket as object | undefined), ...socket } }),
    ...(db !== undefined && { database: db }),
  });
  client.on('error', onError);
  const connect = () => {
    const connecting = client.connect();
    connecting.catch(onError);
    return connecting;
  };
  return { port: new NodeRedisPort(client, connect), close: () => closeNodeRedisClient(client) };
}
