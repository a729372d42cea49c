import type { Event as ZkEvent } from 'node-zookeeper-client';
import { delay } from '../../utils/abort';
import { isConnectionLoss } from './zookeeper-errors';
import type { ZooKeeperSession } from './zookeeper-session';

const NODE_DELETED = 2;
/** Longest pause between tries of removeWhileSession (doubling from 50 ms). */
const MAX_REMOVE_RETRY_MS = 1_000;

interface Entry {
  readonly sessionId: string;
  readonly listeners: Set<() => void>;
  readonly watcher: (event: ZkEvent) => void;
  /** Known to be deleted: every listener, also one that subscribes later, hears of it. */
  gone?: boolean;
}

/**
 * A watch on each contender's own node, set by the same request that reads the node's Stat after creating
 * it (for the fencing token), so it costs no extra round trip. When the node of a held lock is deleted by anyone but its release
 * (an operator, a script), the handle hears of it at once instead of at its next renewal.
 *
 * A node granted alone (QueueEntry.join) skips that read: the listing that found it alone left a watch on the
 * lock path's children (`throughLockPath`), and only when that fires (a contender came, or a node went, ours
 * perhaps) is the node read and given its own watch. An uncontended acquire + release thus makes three requests,
 * not four.
 *
 * A deletion can be heard before anyone listens: a grant returns as soon as the lock is ours, and the handle
 * observes only after it. So a deleted entry stays, marked, for the listener still to come, and ends when its
 * owner removes or forgets the node, or when the session it belongs to expires (an expired session's watches
 * never fire). node-zookeeper-client cannot remove a watch.
 */
export class OwnNodeWatches {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly session: ZooKeeperSession,
    private readonly track: (work: Promise<unknown>) => void,
  ) {}

  /** The watcher to pass to the watchNode() call that reads a node we just created. */
  watcherFor(path: string, sessionId: string): (event: ZkEvent) => void {
    const watcher = (event: ZkEvent) => this.onWatch(path, event);
    this.entries.set(path, { sessionId, listeners: new Set(), watcher });
    return watcher;
  }

  /** Calls `listener` once if the node is deleted. Returns the unsubscribe function. */
  onDeleted(path: string, listener: () => void): () => void {
    const entry = this.entries.get(path);
    if (!entry) return () => undefined;
    if (entry.gone) {
      let removed = false;
      queueMicrotask(() => removed || listener());
      return () => (removed = true);
    }
    entry.listeners.add(listener);
    return () => entry.listeners.delete(listener);
  }

  /**
   * The child watch a listing leaves on the lock path (pass `watcher` with it), for a node that listing finds
   * alone (`follow` it then): once the children change (a contender came, or a node went, ours perhaps), the
   * node is read and gets its own watch, or is reported deleted. A change heard before `follow` is kept for it:
   * the event can arrive right behind the listing's reply.
   */
  throughLockPath(): { readonly watcher: () => void; follow(path: string, sessionId: string): void } {
    let node: string | undefined;
    let changed = false;
    return {
      watcher: () => {
        changed = true;
        if (node !== undefined) this.recheck(node);
      },
      follow: (path, sessionId) => {
        this.watcherFor(path, sessionId);
        node = path;
        if (changed) this.recheck(path);
      },
    };
  }

  /**
   * Ends the entry, then deletes the node: nobody listens for a node its owner removes. Ended first, because
   * the delete's own watch event arrives ahead of its reply, and a node granted alone would read itself again.
   */
  remove(path: string): Promise<boolean> {
    this.forget(path);
    return this.session.remove(path);
  }

  /**
   * As remove(), retrying through connection losses for as long as `sessionId`, the node's session, lives: a
   * delete lost with a dropped connection would otherwise leave the node, and so the lock, held until the session
   * ends, which for a live process may be never. Resolves false when the node was already gone or its session
   * expired (the server deleted it then).
   */
  async removeWhileSession(path: string, sessionId: string): Promise<boolean> {
    for (let failures = 0; this.session.sessionId === sessionId; failures++) {
      try {
        return await this.remove(path);
      } catch (error) {
        if (!isConnectionLoss(error)) throw error;
        await delay(Math.min(MAX_REMOVE_RETRY_MS, 50 * 2 ** failures));
      }
    }
    return false;
  }

  /** Ends the entry: the node is gone or being removed by its owner, or its watch could not be set. */
  forget(path: string): void {
    this.entries.delete(path);
  }

  /** The session expired: its watches will never fire. Returns the paths of its nodes, which the server deleted. */
  forgetSession(sessionId: string): string[] {
    const forgotten: string[] = [];
    for (const [path, entry] of this.entries) {
      if (entry.sessionId !== sessionId) continue;
      this.entries.delete(path);
      forgotten.push(path);
    }
    return forgotten;
  }

  get size(): number {
    return this.entries.size;
  }

  private onWatch(path: string, event: ZkEvent): void {
    const entry = this.entries.get(path);
    if (!entry) return;
    if (event.getType() === NODE_DELETED) return this.deleted(entry);
    // The data changed (Curator's revocation request writes to the node): watches are one-shot, so set it again.
    this.rewatch(path, entry);
  }

  /** Nothing when the entry has ended (released, forgotten, or its session expired). */
  private recheck(path: string): void {
    const entry = this.entries.get(path);
    if (entry) this.rewatch(path, entry);
  }

  /** A failed read leaves no watch: the handle still learns of a deletion at its next renewal. */
  private rewatch(path: string, entry: Entry): void {
    this.track(
      this.session.watchNode(path, entry.watcher).then(
        (stat) => stat === null && this.entries.get(path) === entry && this.deleted(entry),
        () => undefined,
      ),
    );
  }

  private deleted(entry: Entry): void {
    if (entry.gone) return;
    entry.gone = true;
    const listeners = [...entry.listeners];
    entry.listeners.clear();
    for (const listener of listeners) listener();
  }
}
