import { randomUUID } from 'node:crypto';
import type { Etcd3, IKeyValue } from 'etcd3';
import type { AcquireRequest, HeldLock, LockGrant } from '../../lib/backends/lock-backend.interface';
import { lockPrefix, prefixRangeEnd } from '../../lib/backends/etcd/etcd-key-layout';
import type { EtcdLockState } from '../../lib/backends/etcd/etcd-lock-state';

export const NAMESPACE = 'locks';

export function lockRequest(key: string, ttl = 5_000, namespace = NAMESPACE): AcquireRequest {
  return { namespace, key, token: randomUUID(), ttl };
}

export function held(request: AcquireRequest, grant: LockGrant): HeldLock {
  return { ...request, fencingToken: grant.fencingToken, state: grant.state };
}

export function stateOf(grant: LockGrant): EtcdLockState {
  return grant.state as EtcdLockState;
}

/** Contenders under a lock's prefix, oldest (the owner) first, read straight from etcd. */
export async function contenders(client: Etcd3, key: string, namespace = NAMESPACE): Promise<IKeyValue[]> {
  const start = Buffer.from(lockPrefix(namespace, key));
  const response = await client.kv.range({
    key: start,
    range_end: prefixRangeEnd(start),
    sort_target: 2,
    sort_order: 1,
  });
  return response.kvs;
}

export async function contenderKeys(client: Etcd3, key: string, namespace = NAMESPACE): Promise<string[]> {
  return (await contenders(client, key, namespace)).map((kv) => kv.key.toString());
}

/** Polls until `condition` holds; waiting on state we cannot subscribe to (a key appearing in etcd). */
export async function eventually(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20).unref());
  }
}

/** Waits until `count` contenders are queued under the lock. */
export function queued(client: Etcd3, key: string, count: number): Promise<void> {
  return eventually(
    async () => (await contenders(client, key)).length === count,
    `${count} contenders are queued on "${key}"`,
  );
}

/** Keys the client's shared watch stream currently watches (etcd3's WatchManager is private). */
export function watchedKeys(client: Etcd3): string[] {
  const manager = (client as unknown as { watchManager: { watchers: { request: { key: Buffer } }[] } }).watchManager;
  return manager.watchers.map((watcher) => watcher.request.key.toString()).sort();
}

/** Tracks whether a promise settled, to assert that a waiter is still waiting. */
export function track<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  return { promise, settled: () => done };
}
