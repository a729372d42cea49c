import type { Stat } from 'node-zookeeper-client';
import type { AcquireRequest } from '../lock-backend.interface';
import { monotonicNow } from '../../utils/clock';
import { settledWithin } from '../shared/backend-lifecycle';
import type { AcquisitionControl } from './acquisition-control';
import { CREATE_MODE, hex } from './zookeeper-client-facts';
import { isConnectionLoss, isSessionExpired, isZkError, ZK_ERROR } from './zookeeper-errors';
import { zxidOf } from './zookeeper-lock-state';
import { findOwnNode, namespacePath } from './zookeeper-node-layout';
import { AcquisitionContext, Contender, ContenderRecipe, MAX_PARENT_ATTEMPTS } from './zookeeper-queue';

type Listing = { readonly children: string[]; readonly stat: Stat };

/** How long a failed or aborted acquire waits for its node's delete before it rejects. */
const ABANDON_WAIT_MS = 2_000;
/**
 * How long it waits, first, for a client's first connection: the create sits in the client's queue until then,
 * and the delete behind it. A reachable server answers in milliseconds; an unreachable one should not hold the
 * caller's abort for long.
 */
const FIRST_CONNECT_WAIT_MS = 500;

/**
 * Our node in a lock path's queue, from joining to leaving (for ZooKeeperAcquisition): creates it (and the lock
 * path, which a release elsewhere may have deleted), finds it by its protected name after a lost create reply,
 * reads its Stat with a watch, and deletes it when the acquisition fails.
 */
export class QueueEntry {
  /** A create may have left a node of ours on the server that is neither handed over nor removed. */
  private mayOwnNode = false;
  private ownPath: string | undefined;

  constructor(
    private readonly ctx: AcquisitionContext,
    private readonly control: AcquisitionControl,
    private readonly request: AcquireRequest,
    private readonly parent: string,
    private readonly prefix: string,
    private readonly recipe?: ContenderRecipe,
  ) {}

  /**
   * Creates our node (and the lock path if missing) and reads its Stat, which also watches it. The listing of the
   * lock path goes out right behind the create, in the same pipeline (a session's requests run in order, so it
   * sees our node). When it shows our node alone, the lock is ours with no further round trip and no Stat read:
   * the fencing token is then the lock path's pzxid (see aloneIn), and the child watch the listing left on the
   * lock path stands in for the watch on our node until the children change (OwnNodeWatches.throughLockPath).
   */
  async join(): Promise<Contender> {
    const { session } = this.ctx;
    let parentAttempts = 0;
    let failures = 0;
    for (;;) {
      if (this.control.signal.aborted) throw this.control.signal.reason;
      let path: string;
      let listing: Promise<Listing | null> | undefined;
      let sentAt = monotonicNow();
      const pathWatch = this.recipe ? undefined : this.ctx.ownNodes.throughLockPath();
      try {
        this.mayOwnNode = true;
        // After a NO_NODE, the lock path goes out in the same pipeline, ahead of our node: one round trip.
        const parents = parentAttempts > 0 ? this.createLockPath() : Promise.resolve();
        const created = session.create(
          `${this.parent}/${this.prefix}`,
          this.recipe?.nodeData ?? this.ctx.nodeData,
          CREATE_MODE.EPHEMERAL_SEQUENTIAL,
        );
        sentAt = monotonicNow();
        listing = session.getChildrenAndStat(this.parent, pathWatch?.watcher);
        listing.catch(() => undefined);
        path = await this.control.server(Promise.all([parents, created]).then(([, node]) => node));
      } catch (error) {
        if (isZkError(error, ZK_ERROR.NO_NODE) && ++parentAttempts <= MAX_PARENT_ATTEMPTS) continue;
        if (!isConnectionLoss(error) && !isSessionExpired(error)) throw error;
        // The reply was lost, not necessarily the create: look for our node by its protected name.
        const found = await this.findOwn(++failures, error);
        if (found === undefined) continue;
        path = `${this.parent}/${found}`;
        // That listing went out before the create was known to have happened.
        listing = undefined;
      }
      this.ownPath = path;
      const name = path.slice(this.parent.length + 1);
      // The session the create ran on: a new session would have failed it.
      const sessionId = session.sessionId;
      // Without the alone path (a recipe's node, or no session to name), the read goes out at once.
      const reading = pathWatch && sessionId !== undefined ? undefined : this.readOwnNode(path);
      if (listing === undefined) {
        sentAt = monotonicNow();
        listing = session.getChildrenAndStat(this.parent, pathWatch?.watcher);
        listing.catch(() => undefined);
      }
      const alone = pathWatch && sessionId !== undefined ? await this.aloneIn(listing, name) : undefined;
      if (alone !== undefined && pathWatch && sessionId !== undefined) {
        this.control.queued = true;
        pathWatch.follow(path, sessionId);
        return { path, name, sessionId, czxid: alone, firstListing: { children: Promise.resolve([name]), sentAt } };
      }
      const stat = await (reading ?? this.readOwnNode(path));
      if (stat === null) {
        // Gone already: the session expired in between. Start over.
        this.ctx.ownNodes.forget(path);
        this.ownPath = undefined;
        continue;
      }
      this.control.queued = true;
      return {
        path,
        name,
        sessionId: hex(stat.ephemeralOwner),
        czxid: zxidOf(stat.czxid),
        firstListing: { children: listing.then((seen) => seen?.children ?? null), sentAt },
      };
    }
  }

  /**
   * The lock path's pzxid (the zxid of its last child create or delete) when the listing shows our node alone,
   * else undefined. It is the node's own czxid unless another node came and went after ours, and it is just as
   * good a fencing token: every grant on this path before ours was of a node deleted before this listing (so
   * its token is smaller than that delete's zxid, which the pzxid is at least), and every grant after ours is
   * of a node created after this listing (so its czxid, and any pzxid it takes, is larger). A listing that
   * fails or shows anyone else leaves the decision to the usual path.
   */
  private async aloneIn(listing: Promise<Listing | null>, name: string): Promise<bigint | undefined> {
    let seen: Listing | null;
    try {
      seen = await this.control.server(listing);
    } catch {
      return undefined;
    }
    if (seen === null || seen.children.length !== 1 || seen.children[0] !== name) return undefined;
    return zxidOf(seen.stat.pzxid);
  }

  /** Our node's Stat (its czxid is the fencing token), leaving the watch on it; null if it is gone. */
  private async readOwnNode(path: string): Promise<Stat | null> {
    let failures = 0;
    for (;;) {
      const watcher = this.ctx.ownNodes.watcherFor(path, this.ctx.session.sessionId ?? '');
      try {
        return await this.control.server(this.ctx.session.watchNode(path, watcher));
      } catch (error) {
        this.ctx.ownNodes.forget(path);
        if (isSessionExpired(error)) return null;
        if (!isConnectionLoss(error)) throw error;
        await this.control.pauseAfterFailure(++failures, error);
      }
    }
  }

  /** Every ancestor of our node, pipelined: ZooKeeper applies one session's requests in order. */
  private async createLockPath(): Promise<void> {
    const { session } = this.ctx;
    const ancestors = [namespacePath(this.request.namespace)];
    for (let at = this.parent.indexOf('/', ancestors[0].length + 1); at > 0; at = this.parent.indexOf('/', at + 1)) {
      ancestors.push(this.parent.slice(0, at));
    }
    ancestors.push(this.parent);
    await Promise.all(ancestors.map((path) => session.ensurePersistent(path)));
  }

  /** After a lost create reply: our node's name if the create happened, undefined if it did not. */
  private async findOwn(failures: number, lastError: unknown): Promise<string | undefined> {
    for (;;) {
      try {
        const children = await this.control.server(this.ctx.session.getChildren(this.parent));
        return children ? findOwnNode(children, this.request.token) : undefined;
      } catch (error) {
        if (!isConnectionLoss(error) && !isSessionExpired(error)) throw error;
        await this.control.pauseAfterFailure(++failures, lastError);
      }
    }
  }

  /** Our node is no longer ours to delete: handed over with a grant, deleted by us, or gone. */
  disown(): void {
    this.mayOwnNode = false;
    this.ownPath = undefined;
  }

  /**
   * Leaves the queue: deletes our node, or, when a create's outcome is unknown, whatever
   * node carries our token. Requests of one session run in order, so a create still in flight lands first.
   */
  abandon(): Promise<void> {
    if (!this.mayOwnNode) return Promise.resolve();
    this.mayOwnNode = false;
    const { session } = this.ctx;
    const path = this.ownPath;
    this.ownPath = undefined;
    const cleanUp = async () => {
      if (path) {
        await this.ctx.ownNodes.remove(path);
        return;
      }
      const children = (await session.getChildren(this.parent)) ?? [];
      const ours = children.filter((name) => name.startsWith(this.prefix));
      await Promise.all(ours.map((name) => session.remove(`${this.parent}/${name}`)));
    };
    const cleanup = cleanUp();
    this.ctx.track(cleanup);
    // The caller hears of the failure once our node is gone (bounded), so a read right after never sees it.
    // After a lost connection it hears at once: the delete waits for the reconnect (or the session's expiry).
    return session
      .firstConnectWithin(FIRST_CONNECT_WAIT_MS)
      .then((connected) => settledWithin(cleanup, connected ? ABANDON_WAIT_MS : 0, true));
  }
}
