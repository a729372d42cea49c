import { startEtcd, TestEtcdServer } from './etcd-server';
import { startRedis, TestRedisServer } from './redis-server';
import { killAllServersSync } from './server-process';
import {
  ENV_ETCD_ENDPOINT,
  ENV_REDIS_PORT,
  ENV_REDIS_URL,
  reapOrphans,
  removePidFile,
  writePidFile,
} from './shared-servers';

/** What global-teardown needs; Jest runs setup and teardown in the same process and global scope. */
export interface SharedServers {
  redis?: TestRedisServer;
  etcd?: TestEtcdServer;
  onSignal: (signal: NodeJS.Signals) => void;
}

export const SHARED_SERVERS = Symbol.for('nest-distributed-lock:test:shared-servers');

type GlobalWithServers = typeof globalThis & { [SHARED_SERVERS]?: SharedServers };

/** Starts one redis-server and one etcd for the whole run and publishes their addresses to the test workers. */
export default async function globalSetup(): Promise<void> {
  reapOrphans();

  const onSignal = (signal: NodeJS.Signals): void => {
    killAllServersSync();
    removePidFile(process.pid);
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    // With our listener gone, re-raising gives the default behaviour (exit) unless Jest has its own handler.
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  };
  const shared: SharedServers = { onSignal };
  (globalThis as GlobalWithServers)[SHARED_SERVERS] = shared;
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.once('exit', () => removePidFile(process.pid));

  const [redis, etcd] = await Promise.allSettled([startRedis(), startEtcd()]);
  if (redis.status === 'fulfilled') shared.redis = redis.value;
  if (etcd.status === 'fulfilled') shared.etcd = etcd.value;
  writePidFile({
    owner: process.pid,
    servers: [
      ...(shared.redis ? [{ pid: shared.redis.pid, binary: 'redis-server', port: shared.redis.port }] : []),
      ...(shared.etcd ? [{ pid: shared.etcd.pid, binary: 'etcd', port: shared.etcd.port }] : []),
    ],
  });
  if (redis.status === 'rejected' || etcd.status === 'rejected') {
    await Promise.allSettled([shared.redis?.stop(), shared.etcd?.stop()]);
    removePidFile(process.pid);
    throw redis.status === 'rejected' ? redis.reason : (etcd as PromiseRejectedResult).reason;
  }

  process.env[ENV_REDIS_URL] = shared.redis!.url;
  process.env[ENV_REDIS_PORT] = String(shared.redis!.port);
  process.env[ENV_ETCD_ENDPOINT] = shared.etcd!.endpoint;
}
