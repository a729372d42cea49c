import type {
  IoRedisLockClient,
  NodeRedisClusterLockClient,
  NodeRedisLockClient,
  RedisLockClient,
} from '../redis-client';
import { IoRedisPort } from './ioredis-port';
import { NodeRedisClusterPort } from './node-redis-cluster-port';
import { NodeRedisPort } from './node-redis-port';
import type { RedisPort } from './redis-port';

/**
 * The port for the app's client, told apart by shape: ioredis has `evalsha`; node-redis `sendCommand` and
 * `isOpen`, and its cluster also `masters`. Neither package is imported. `owner` names the backend in the
 * TypeError for anything else.
 */
export function redisPortOf(client: RedisLockClient, owner: string): RedisPort {
  if (isIoRedis(client)) return new IoRedisPort(client);
  // Before the plain client: a cluster has sendCommand, isOpen and duplicate too.
  if (isNodeRedisCluster(client)) return new NodeRedisClusterPort(client);
  if (isNodeRedisClient(client)) return new NodeRedisPort(client);
  throw new TypeError(
    `${owner}: \`client\` must be an ioredis Redis or Cluster, or a node-redis client (createClient() or createCluster()).` +
      (isNodeRedisSentinel(client)
        ? " node-redis' createSentinel() is not supported: use an ioredis client with { sentinels, name } for Sentinel."
        : ''),
  );
}

function isNodeRedisCluster(client: RedisLockClient): client is NodeRedisClusterLockClient {
  const candidate = client as Partial<NodeRedisClusterLockClient>;
  return typeof candidate.sendCommand === 'function' && Array.isArray(candidate.masters);
}

function isIoRedis(client: RedisLockClient): client is IoRedisLockClient {
  return typeof (client as Partial<IoRedisLockClient>).evalsha === 'function';
}

function isNodeRedisClient(client: RedisLockClient): client is NodeRedisLockClient {
  const candidate = client as Partial<NodeRedisLockClient>;
  return (
    typeof candidate.sendCommand === 'function' &&
    typeof candidate.isOpen === 'boolean' &&
    typeof candidate.duplicate === 'function'
  );
}

/** node-redis' createSentinel(): sendCommand and isOpen like a client, but no duplicate() for a subscriber. */
function isNodeRedisSentinel(client: RedisLockClient): boolean {
  const candidate = client as { sendCommand?: unknown; isOpen?: unknown; getMasterNode?: unknown };
  return typeof candidate.sendCommand === 'function' && typeof candidate.getMasterNode === 'function';
}
