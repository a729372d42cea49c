import { EtcdLockBackend } from '../backends/etcd/etcd-lock.backend';
import type { LockBackend } from '../backends/lock-backend.interface';
import { RedisLockBackend } from '../backends/redis/redis-lock.backend';
import { LockService } from '../lock.service';
import type { CliTarget } from './parse-args';

export interface TargetOptions {
  readonly prefix: string;
  /** Deadline of each server call, ms. */
  readonly timeout: number;
  /** Environment, for etcd credentials (ETCDCTL_USER=user:password, as etcdctl reads it). */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * A LockService on the named server, used only to read. Connections are created lazily and fail after one
 * retry, so a wrong address is reported within the call deadline rather than retried forever.
 * Each backend loads its client package when constructed: `inspect --etcd` does not need ioredis installed.
 */
export function openTarget(target: CliTarget, options: TargetOptions): LockService {
  return new LockService(backendFor(target, options), {
    keyPrefix: options.prefix,
    operationTimeout: options.timeout,
    instanceId: 'cli',
  });
}

function backendFor(target: CliTarget, options: TargetOptions): LockBackend {
  if (target.kind === 'redis') {
    return new RedisLockBackend({
      url: target.url,
      redisOptions: {
        lazyConnect: true,
        maxRetriesPerRequest: 1,
        connectTimeout: options.timeout,
        connectionName: 'nest-distributed-lock:cli',
      },
    });
  }
  const auth = etcdAuth(options.env ?? process.env);
  return new EtcdLockBackend({ hosts: [...target.hosts], dialTimeout: options.timeout, ...(auth && { auth }) });
}

function etcdAuth(env: NodeJS.ProcessEnv): { username: string; password: string } | undefined {
  const user = env['ETCDCTL_USER'];
  if (!user) return undefined;
  const colon = user.indexOf(':');
  return colon < 0
    ? { username: user, password: env['ETCDCTL_PASSWORD'] ?? '' }
    : { username: user.slice(0, colon), password: user.slice(colon + 1) };
}
