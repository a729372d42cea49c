import type { AdapterSpec } from './adapter';
import { etcd3Lock } from './etcd3-lock';
import {
  oursEtcd,
  oursEtcdBackendOnly,
  oursRedis,
  oursRedisBackendOnly,
  oursRedisUnfair,
  oursRedisNodeRedis,
  oursRedlockOneMaster,
  oursZooKeeper,
  oursZooKeeperBackendOnly,
} from './ours';
import { rawEtcd, rawEtcdSession } from './raw-etcd';
import { oursRedisScriptsOnly, rawRedis, rawRedisFenced } from './raw-redis';
import { rawRedisHandoff } from './raw-redis-handoff';
import { rawZooKeeper } from './raw-zookeeper';
import { redisSemaphore } from './redis-semaphore';
import { redlockUniversal } from './redlock-universal';
import { redlockV4 } from './redlock-v4';
import { sesameRedlock } from './sesame-redlock';

/** Every library in the bench, ours first, then peers, then the limits. */
export const ADAPTERS: readonly AdapterSpec[] = [
  oursRedis,
  oursRedisBackendOnly,
  redlockV4,
  sesameRedlock,
  redisSemaphore,
  redlockUniversal,
  rawRedis,
  oursEtcd,
  oursEtcdBackendOnly,
  etcd3Lock,
  rawEtcd,
  rawEtcdSession,
];

/** Redis: the server-time floor of any fenced lock (issue 18), measured only where that is the question. */
export const REDIS_UNCONTENDED_FLOOR: readonly AdapterSpec[] = [rawRedisFenced, oursRedisScriptsOnly];

/** ZooKeeper: no Node lock library to compare with, so only the uncontended scenario runs it, against raw calls. */
export const ZOOKEEPER_UNCONTENDED: readonly AdapterSpec[] = [oursZooKeeper, oursZooKeeperBackendOnly, rawZooKeeper];

/** Other configurations of ours, run only where a scenario asks for them (forked workers find them by name too). */
export const VARIANTS: readonly AdapterSpec[] = [
  oursRedisUnfair,
  oursRedlockOneMaster,
  oursRedisNodeRedis,
  rawRedisHandoff,
];

/** `specs` with the node-redis row of ours right after the ioredis one (when that is there): issue 20's comparison. */
export function withNodeRedisRow(specs: readonly AdapterSpec[]): AdapterSpec[] {
  return specs.flatMap((spec) => (spec === oursRedis ? [spec, oursRedisNodeRedis] : [spec]));
}

export function adapterNamed(name: string): AdapterSpec {
  const spec = [...ADAPTERS, ...VARIANTS].find((candidate) => candidate.name === name);
  if (!spec) throw new Error(`no bench adapter named "${name}"`);
  return spec;
}
