import { startEtcd, TestEtcdServer } from '../../support/etcd-server';
import { startRedis, TestRedisServer } from '../../support/redis-server';
import type { ChaosBackendKind } from './backends';
import { FaultProxy } from './fault-proxy';
import type { Scope } from './scope';

/**
 * The server(s) one scenario runs against, started for it alone (a scenario restarts, pauses and cuts them
 * off, so it never uses the run's shared servers).
 */
export interface ChaosTarget {
  readonly kind: ChaosBackendKind;
  /** What a worker connects to directly ('' for memory). */
  readonly address: string;
  /** True when locks are shared between OS processes (memory: only between contenders in one worker). */
  readonly crossProcess: boolean;
  readonly redis?: TestRedisServer;
  readonly etcd?: TestEtcdServer;
  /** Redlock: the independent masters. */
  readonly masters?: TestRedisServer[];
  /**
   * An address through new fault proxies, one in front of each server, so a fault on them cuts off only the
   * clients that use this address.
   */
  proxied(scope: Scope): Promise<{ address: string; proxies: FaultProxy[] }>;
}

export async function startTarget(kind: ChaosBackendKind, scope: Scope): Promise<ChaosTarget> {
  switch (kind) {
    case 'memory':
      return { kind, address: '', crossProcess: false, proxied: async () => ({ address: '', proxies: [] }) };
    case 'redis':
    case 'redis-node': {
      const redis = scope.defer(await startRedis());
      return {
        kind,
        address: redis.url,
        crossProcess: true,
        redis,
        async proxied(owner) {
          const proxy = owner.defer(await FaultProxy.start(redis.port));
          return { address: `redis://${proxy.address}`, proxies: [proxy] };
        },
      };
    }
    case 'etcd': {
      const etcd = scope.defer(await startEtcd());
      return {
        kind,
        address: etcd.endpoint,
        crossProcess: true,
        etcd,
        async proxied(owner) {
          const proxy = owner.defer(await FaultProxy.start(etcd.port));
          return { address: `http://${proxy.address}`, proxies: [proxy] };
        },
      };
    }
    case 'redlock': {
      const masters = await Promise.all([startRedis(), startRedis(), startRedis()]);
      for (const master of masters) scope.defer(master);
      return {
        kind,
        address: masters.map((master) => master.url).join(','),
        crossProcess: true,
        masters,
        async proxied(owner) {
          const proxies = await Promise.all(masters.map((master) => FaultProxy.start(master.port)));
          for (const proxy of proxies) owner.defer(proxy);
          return { address: proxies.map((proxy) => `redis://${proxy.address}`).join(','), proxies };
        },
      };
    }
    case 'zookeeper': {
      // A hook: test/support/zookeeper-server.ts needs Debian's zookeeper package and a JDK.
      const { startZooKeeper } =
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        require('../../support/zookeeper-server') as typeof import('../../support/zookeeper-server');
      const zookeeper = scope.defer(await startZooKeeper());
      return {
        kind,
        address: zookeeper.connectionString,
        crossProcess: true,
        async proxied(owner) {
          const proxy = owner.defer(await FaultProxy.start(zookeeper.port));
          return { address: proxy.address, proxies: [proxy] };
        },
      };
    }
  }
}
