import type { IoRedisLockClient, NodeRedisLockClient, RedisLockClient } from '../redis-client';
import { IoRedisPort } from './ioredis-port';
import { NodeRedisPort } from './node-redis-port';
import type { RedisPort } from './redis-port';

/**
 * The port for the app's client, told apart by shape: ioredis has `evalsha`, node-redis `sendCommand` and
 * `isOpen`. Neither package is imported. `owner` names the backend in the TypeError for anything else.
 */
export function redisPortOf(client: RedisLockClient, owner: string): RedisPort {
  if (isIoRedis(client)) return new IoRedisPort(client);
  if (isNodeRedisClient(client)) return new NodeRedisPort(client);
  const candidate = client as unknown as Record<string, unknown>;
  if (candidate && typeof candidate.sendCommand === 'function' && typeof candidate.getSlotMaster === 'function') {
    throw new TypeError(
      `${owner}: a node-redis cluster (createCluster) is not supported yet; pass an ioredis Cluster, or a node-redis client per master.`,
    );
  }
  throw new TypeError(
    `${owner}: \`client\` must be an ioredis Redis or Cluster, or a node-redis client (createClient()).`,
  );
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
