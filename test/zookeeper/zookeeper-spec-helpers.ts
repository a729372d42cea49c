/* eslint-disable @typescript-eslint/prefer-promise-reject-errors -- node-zookeeper-client's Exception inherits Error at runtime; its @types omit that */
import { Client, createClient, Stat } from 'node-zookeeper-client';
import { containSocketHandlerErrors } from '../../lib/backends/zookeeper/owned-client';
import type { LockGrant } from '../../lib/backends/lock-backend.interface';
// `reject(error)` below: node-zookeeper-client's Exception inherits Error at runtime; its @types omit that.
import type { ZooKeeperLockState } from '../../lib/backends/zookeeper/zookeeper-lock-state';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper-lock.backend';
import { ALL_MARKERS, lockPath, sortContenders } from '../../lib/backends/zookeeper/zookeeper-node-layout';

import { DEFAULT_NAMESPACE as NAMESPACE } from '../support/lock-requests';
import { eventually } from '../support/time';

export { held, lockRequest, never } from '../support/lock-requests';
export { eventually, NAMESPACE };

export function stateOf(grant: LockGrant): ZooKeeperLockState {
  return grant.state as ZooKeeperLockState;
}

/** A raw client for looking at the tree behind the backend's back, with promise-returning calls. */
export class AdminClient {
  private constructor(readonly client: Client) {}

  static connect(connectionString: string, sessionTimeout = 10_000): Promise<AdminClient> {
    const client = createClient(connectionString, { sessionTimeout, spinDelay: 100 });
    containSocketHandlerErrors(client);
    return new Promise((resolve) => {
      client.once('connected', () => resolve(new AdminClient(client)));
      client.connect();
    });
  }

  children(path: string): Promise<string[]> {
    return new Promise((resolve, reject) =>
      this.client.getChildren(path, (error, children) =>
        error ? (isNoNode(error) ? resolve([]) : reject(error)) : resolve(children),
      ),
    );
  }

  /** The contenders of a lock, in Curator's order: the owner first. */
  async contenders(key: string, namespace = NAMESPACE): Promise<string[]> {
    return sortContenders(await this.children(lockPath(namespace, key)), ALL_MARKERS);
  }

  stat(path: string): Promise<Stat | null> {
    return new Promise((resolve, reject) =>
      this.client.exists(path, (error, stat) => (error ? reject(error) : resolve(stat))),
    );
  }

  data(path: string): Promise<Buffer> {
    return new Promise((resolve, reject) =>
      this.client.getData(path, (error, data) => (error ? reject(error) : resolve(data))),
    );
  }

  remove(path: string): Promise<void> {
    return new Promise((resolve, reject) =>
      this.client.remove(path, -1, (error) => (error ? reject(error) : resolve())),
    );
  }

  create(path: string, data: Buffer, mode: number): Promise<string> {
    return new Promise((resolve, reject) =>
      this.client.create(path, data, mode, (error, created) => (error ? reject(error) : resolve(created))),
    );
  }

  close(): void {
    this.client.close();
  }
}

function isNoNode(error: unknown): boolean {
  return (error as { code?: number }).code === -101;
}

/** Waits until `count` contenders are queued on the lock. */
export function queued(admin: AdminClient, key: string, count: number, namespace = NAMESPACE): Promise<void> {
  return eventually(
    async () => (await admin.contenders(key, namespace)).length === count,
    `${count} contenders are queued on "${key}"`,
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

/** Whether the backend's client is connected right now (ZooKeeperSession is private to the backend). */
export function isConnected(backend: ZooKeeperLockBackend): boolean {
  return (backend as unknown as { session: { isConnected: boolean } }).session.isConnected;
}

/**
 * Paths on which the backend's client has a data watch armed right now (node-zookeeper-client keeps them on
 * a private WatcherManager; getData and exists-on-an-existing-node both arm data watches).
 */
export function armedDataWatches(backend: ZooKeeperLockBackend): string[] {
  const session = (backend as unknown as { session: { client: Client } }).session;
  const manager = (
    session.client as unknown as {
      connectionManager: { watcherManager: { dataWatchers: Record<string, { listeners(event: string): unknown[] }> } };
    }
  ).connectionManager.watcherManager;
  return Object.entries(manager.dataWatchers)
    .filter(([, emitter]) => emitter.listeners('notification').length > 0)
    .map(([path]) => path)
    .sort();
}

/** The node name (last path segment) of a granted lock. */
export function nodeName(grant: LockGrant): string {
  const path = stateOf(grant).nodePath;
  return path.slice(path.lastIndexOf('/') + 1);
}
