import type { ChaosBackendKind } from '../harness/backends';
import type { ChaosProfileName } from '../harness/profile';
import type { ScenarioResult } from '../harness/result';
import { baselineScenario } from './baseline';
import { etcdClusterScenario } from './etcd-cluster';
import { compactionScenario, leaseExpiredWhileQueuedScenario } from './etcd-queue-faults';
import { etcdctlInteropScenario } from './etcdctl-interop';
import { holderKilledScenario } from './holder-killed';
import { leaksScenario } from './leaks';
import { loadScenario } from './load';
import { networkScenario } from './network';
import { pausesScenario } from './pauses';
import { redisRestartScenario } from './redis-restart';
import { redlockScenario } from './redlock';
import { starvationScenario } from './starvation';

/** One scenario of the chaos table and the backends it applies to. */
export interface CatalogEntry {
  /** The scenario number, e.g. '2'; the runner's --only takes these. */
  readonly id: string;
  readonly backends: readonly ChaosBackendKind[];
  run(backend: ChaosBackendKind, profile: ChaosProfileName): Promise<ScenarioResult>;
}

/**
 * Every scenario `npm run chaos` runs, in table order, on every backend it applies to. Memory is left out where
 * the fault needs locks shared between OS processes. ZooKeeper's session timeout, not the ttl, bounds how long
 * a paused holder keeps its lock, so its pauses (2, 3) outlast the session; the network, restart and cluster
 * scenarios (4-9, 13) are about Redis and etcd. 'redis-node' (the Redis backend over node-redis) runs where the
 * client matters: its reconnects and NOSCRIPT handling (4), offline-queue deadlines (5) and what close() leaves (11).
 */
export const CATALOG: readonly CatalogEntry[] = [
  {
    id: '1',
    backends: ['memory', 'redis', 'etcd', 'redlock', 'zookeeper'],
    run: (backend, profile) => baselineScenario(backend, profile),
  },
  {
    id: '2',
    backends: ['redis', 'etcd', 'redlock', 'zookeeper'],
    run: (backend, profile) => pausesScenario(backend, profile, { fenced: true }),
  },
  {
    id: '2c',
    backends: ['redis', 'etcd', 'redlock', 'zookeeper'],
    run: (backend, profile) => pausesScenario(backend, profile, { fenced: false }),
  },
  { id: '3', backends: ['memory', 'redis', 'etcd', 'redlock', 'zookeeper'], run: starvationScenario },
  {
    id: '4',
    backends: ['redis', 'redis-node'],
    run: (backend, profile) => redisRestartScenario(profile, backend === 'redis-node' ? backend : 'redis'),
  },
  { id: '5', backends: ['redis', 'redis-node', 'etcd', 'redlock'], run: networkScenario },
  { id: '6', backends: ['etcd'], run: (_backend, profile) => etcdClusterScenario(profile) },
  { id: '7', backends: ['etcd'], run: (_backend, profile) => leaseExpiredWhileQueuedScenario(profile) },
  { id: '8', backends: ['etcd'], run: (_backend, profile) => compactionScenario(profile) },
  { id: '9', backends: ['redlock'], run: (_backend, profile) => redlockScenario(profile) },
  { id: '10', backends: ['redis', 'etcd', 'redlock', 'zookeeper'], run: holderKilledScenario },
  { id: '11', backends: ['memory', 'redis', 'redis-node', 'etcd', 'redlock', 'zookeeper'], run: leaksScenario },
  { id: '12', backends: ['memory', 'redis', 'etcd', 'redlock', 'zookeeper'], run: loadScenario },
  { id: '13', backends: ['etcd'], run: (_backend, profile) => etcdctlInteropScenario(profile) },
];
