import type { AdapterSpec } from './adapter';
import { etcd3Lock } from './etcd3-lock';
import { oursEtcd, oursRedis, oursRedisBackendOnly } from './ours';
import { rawEtcd, rawEtcdSession } from './raw-etcd';
import { rawRedis } from './raw-redis';
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
  etcd3Lock,
  rawEtcd,
  rawEtcdSession,
];

export function adapterNamed(name: string): AdapterSpec {
  const spec = ADAPTERS.find((candidate) => candidate.name === name);
  if (!spec) throw new Error(`no bench adapter named "${name}"`);
  return spec;
}
