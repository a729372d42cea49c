import type { Event as ZkEvent, Stat } from 'node-zookeeper-client';
import { CREATE_MODE } from './zookeeper-client-facts';
import { ZooKeeperConnection } from './zookeeper-connection';
import { isZkError, ZK_ERROR } from './zookeeper-errors';

/**
 * The ZooKeeper connection the backend works through: its requests as promises, where a missing node is an
 * answer (null or false) rather than an error. The client and the session's life are ZooKeeperConnection's.
 */
export class ZooKeeperSession extends ZooKeeperConnection {
  /** Creates a node; resolves the path the server gave it (with the sequence suffix for sequential modes). */
  create(path: string, data: Buffer, mode: number): Promise<string> {
    // Without an ACL of ours, node-zookeeper-client applies its default (open to all), as Curator does.
    return this.call<string>((client, done) => client.create(path, data, this.acls as never, mode, done));
  }

  /** Creates a persistent node with no data unless it exists already. */
  async ensurePersistent(path: string): Promise<void> {
    try {
      await this.create(path, Buffer.alloc(0), CREATE_MODE.PERSISTENT);
    } catch (error) {
      if (!isZkError(error, ZK_ERROR.NODE_EXISTS)) throw error;
    }
  }

  /** Deletes the node (at `version` of its data, or any); resolves false when it did not exist. */
  async remove(path: string, version = -1): Promise<boolean> {
    try {
      await this.call<void>((client, done) => client.remove(path, version, done));
      return true;
    } catch (error) {
      if (isZkError(error, ZK_ERROR.NO_NODE)) return false;
      throw error;
    }
  }

  /** The node's Stat, or null. */
  exists(path: string): Promise<Stat | null> {
    return this.call<Stat | null>((client, done) => client.exists(path, done));
  }

  /** The children's names (unsorted), or null when the node does not exist. */
  async getChildren(path: string): Promise<string[] | null> {
    return (await this.getChildrenAndStat(path))?.children ?? null;
  }

  /**
   * As getChildren, with the node's Stat (its pzxid: the zxid of the last create or delete of a child).
   * node-zookeeper-client sends GetChildren2 either way, so the Stat costs nothing extra. `watcher`: a one-shot
   * watch on the children (fires on the next child create or delete, or the node's deletion), set by the same
   * request.
   */
  async getChildrenAndStat(
    path: string,
    watcher?: (event: ZkEvent) => void,
  ): Promise<{ children: string[]; stat: Stat } | null> {
    try {
      return await this.call<{ children: string[]; stat: Stat }>((client, done) => {
        const answer = (error: unknown, children: string[], stat: Stat) => done(error, { children, stat });
        if (watcher) client.getChildren(path, watcher, answer);
        else client.getChildren(path, answer);
      });
    } catch (error) {
      if (isZkError(error, ZK_ERROR.NO_NODE)) return null;
      throw error;
    }
  }

  /**
   * Reads the node and leaves a one-shot watch on it (fires on change or deletion); resolves its Stat, or
   * null, leaving no watch behind, when the node is already gone. Curator uses getData rather than exists for
   * the same reason: exists on a missing node would leave a watch waiting for a node that never comes back.
   */
  async watchNode(path: string, watcher: (event: ZkEvent) => void): Promise<Stat | null> {
    try {
      return await this.call<Stat>((client, done) =>
        client.getData(path, watcher, (error, _data, stat) => done(error, stat)),
      );
    } catch (error) {
      if (isZkError(error, ZK_ERROR.NO_NODE)) return null;
      throw error;
    }
  }

  /** The node's data and Stat, leaving a one-shot watch when `watcher` is given; null when it does not exist. */
  async getData(path: string, watcher?: (event: ZkEvent) => void): Promise<{ data: Buffer; stat: Stat } | null> {
    try {
      return await this.call<{ data: Buffer; stat: Stat }>((client, done) => {
        const callback = (error: unknown, data: Buffer | undefined, stat: Stat) =>
          done(error, { data: data ?? Buffer.alloc(0), stat });
        if (watcher) client.getData(path, watcher, callback);
        else client.getData(path, callback);
      });
    } catch (error) {
      if (isZkError(error, ZK_ERROR.NO_NODE)) return null;
      throw error;
    }
  }

  /** Replaces the node's data (any version); resolves false when the node does not exist. */
  async setData(path: string, data: Buffer): Promise<boolean> {
    try {
      await this.call<Stat>((client, done) => client.setData(path, data, -1, done));
      return true;
    } catch (error) {
      if (isZkError(error, ZK_ERROR.NO_NODE)) return false;
      throw error;
    }
  }

  /** The children's names (unsorted) and a one-shot watch on the list, or null (no watch) when the node is gone. */
  async watchChildren(path: string, watcher: (event: ZkEvent) => void): Promise<string[] | null> {
    try {
      return await this.call<string[]>((client, done) => client.getChildren(path, watcher, done));
    } catch (error) {
      if (isZkError(error, ZK_ERROR.NO_NODE)) return null;
      throw error;
    }
  }

  /** The node's Stat or null, leaving a one-shot watch either way: on a missing node it fires when it is created. */
  watchExists(path: string, watcher: (event: ZkEvent) => void): Promise<Stat | null> {
    return this.call<Stat | null>((client, done) => client.exists(path, watcher, done));
  }
}
