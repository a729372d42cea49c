import type { Etcd3, IKeyValue } from 'etcd3';
import type { LockGrant } from '../../lib/backends/lock-backend.interface';
import { lockPrefix, prefixRangeEnd } from '../../lib/backends/etcd/etcd-key-layout';
import type { EtcdLockState } from '../../lib/backends/etcd/etcd-lock-state';

import { DEFAULT_NAMESPACE as NAMESPACE } from '../support/lock-requests';
import { eventually } from '../support/time';

export { held, lockRequest, never } from '../support/lock-requests';
export { eventually, NAMESPACE };

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

/** Waits until `count` contenders are queued under the lock. */
export function queued(client: Etcd3, key: string, count: number): Promise<void> {
  return eventually(
    async () => (await contenders(client, key)).length === count,
    `${count} contenders are queued on "${key}"`,
  );
}

/** Keys the client's shared watch stream currently watches (etcd3's WatchManager is private). */
export function watchedKeys(client: Etcd3, only: 'all' | 'created' = 'all'): string[] {
  const manager = (
    client as unknown as { watchManager: { watchers: { id: string | null; request: { key: Buffer } }[] } }
  ).watchManager;
  return manager.watchers
    .filter((watcher) => only === 'all' || watcher.id !== null)
    .map((watcher) => watcher.request.key.toString())
    .sort();
}

/**
 * Waits until `count` watches on `key` were created by the server. A waiter whose watch is created after a
 * later write reads its queue again (it cannot know what that write was), so tests that count reads wait for
 * this before the next write.
 */
export function watchesCreated(client: Etcd3, key: string, count: number): Promise<void> {
  return eventually(
    () => watchedKeys(client, 'created').filter((watched) => watched === key).length === count,
    `${count} watches on "${key}" created by the server`,
  );
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
