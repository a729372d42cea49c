import type { Stat } from 'node-zookeeper-client';
import type { AcquireRequest, LockGrant } from '../lock-backend.interface';
import { LockBackendError } from '../../errors';
import { monotonicNow } from '../../utils/clock';
import { delay, raceAbort } from '../shared/abort';
import { settledWithin } from '../shared/backend-lifecycle';
import { retryBackoff } from '../shared/backoff';
import { isConnectionLoss, isSessionExpired, isZkError, toZooKeeperBackendError, ZK_ERROR } from './zookeeper-errors';
import { ZooKeeperLockState, validUntil, zxidOf } from './zookeeper-lock-state';
import { contenderPrefix, findOwnNode, lockPath, namespacePath, protectedPrefix } from './zookeeper-node-layout';
import {
  AcquisitionContext,
  Contender,
  ContenderRecipe,
  MAX_PARENT_ATTEMPTS,
  Position,
  positionIn,
  Wakeup,
} from './zookeeper-queue';
import { CREATE_MODE, hex } from './zookeeper-client-facts';

/** How long a failed or aborted acquire waits for its node's delete before it rejects. */
const ABANDON_WAIT_MS = 2_000;

/**
 * One acquire or tryAcquire, the way Curator's InterProcessMutex (and, for 'read'/'write', its
 * InterProcessReadWriteLock) does it: create an ephemeral sequential
 * node under the lock path, list the children, and own the lock when ours sorts first. Otherwise watch only
 * the node just before ours, so a release wakes exactly one waiter; when the watch fires, list again, since
 * the predecessor may have left the queue without ever owning the lock.
 *
 * The node's name carries our owner token (Curator's protected mode), so when a create's reply is lost with
 * the connection we find out from the children whether it happened, rather than leave an orphan that
 * would block the lock for the rest of the session. If our node vanishes while we wait (the session
 * expired), we join again at the back, as long as the caller's signal allows.
 */
export class ZooKeeperAcquisition {
  private readonly controller = new AbortController();
  private readonly parent: string;
  private readonly prefix: string;
  private readonly detachUserSignal: () => void;
  private readonly stopSessionEvents: () => void;
  private cancelledWith?: { error: unknown };
  private wakeup?: Wakeup;
  /** A create may have left a node of ours on the server that is neither handed over nor removed. */
  private mayOwnNode = false;
  private ownPath: string | undefined;
  /** Our node is in the queue: the key is busy, as far as we know. */
  private queued = false;

  constructor(
    private readonly ctx: AcquisitionContext,
    private readonly request: AcquireRequest,
    private readonly operation: 'acquire' | 'tryAcquire',
    userSignal?: AbortSignal,
    private readonly recipe?: ContenderRecipe,
  ) {
    this.parent = recipe?.parent ?? lockPath(request.namespace, request.key);
    this.prefix = recipe
      ? `${protectedPrefix(request.token)}${recipe.marker}`
      : contenderPrefix(request.token, request.mode);
    const forward = () => this.controller.abort(userSignal!.reason);
    if (userSignal?.aborted) forward();
    else userSignal?.addEventListener('abort', forward, { once: true });
    this.detachUserSignal = () => userSignal?.removeEventListener('abort', forward);
    // An expired session's watches never fire: wake the waiter so it finds its node gone and joins again.
    this.stopSessionEvents = ctx.session.onEvent((event) => {
      if (event.type === 'expired') this.wakeup?.fire();
    });
  }

  private get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The backend is closing: reject with `error` and leave the queue. */
  cancel(error: unknown): void {
    this.cancelledWith ??= { error };
    this.controller.abort(error);
  }

  async acquire(): Promise<LockGrant> {
    return (await this.queue(true))!;
  }

  /** As acquire(), but resolves undefined instead of joining again when our node vanishes while we wait. */
  acquireOnce(): Promise<LockGrant | undefined> {
    return this.queue(false);
  }

  private async queue(rejoin: boolean): Promise<LockGrant | undefined> {
    try {
      for (;;) {
        const contender = await this.join();
        // Our own node's watch (set by join) wakes us too: if it is deleted while we wait, we rejoin at once.
        const stopWatchingOwnNode = this.ctx.ownNodes.onDeleted(contender.path, () => this.wakeup?.fire());
        const confirmedAt = await this.waitForTurn(contender).finally(stopWatchingOwnNode);
        if (confirmedAt !== undefined) return this.handOver(contender, confirmedAt);
        // Our node is gone; join again at the back.
        this.queued = false;
        this.mayOwnNode = false;
        this.ownPath = undefined;
        if (!rejoin) return undefined;
      }
    } catch (error) {
      await this.abandon();
      throw this.failure(error);
    } finally {
      this.dispose();
    }
  }

  async tryAcquire(): Promise<LockGrant | null> {
    try {
      const contender = await this.join();
      const position = await this.locate(contender);
      if (position.kind === 'first') return this.handOver(contender, position.confirmedAt);
      if (position.kind === 'gone') {
        throw new LockBackendError(
          'zookeeper',
          this.ctx.session.address,
          'tryAcquire',
          'our node vanished right after we created it (the session expired)',
        );
      }
      // Someone holds it: leave at once, like Curator's acquire(0, ms).
      await this.server(this.ctx.session.remove(contender.path));
      this.mayOwnNode = false;
      return null;
    } catch (error) {
      await this.abandon();
      throw this.failure(error);
    } finally {
      this.dispose();
    }
  }

  /** Creates our node (and the lock path if missing) and reads its Stat, which also watches it. */
  private async join(): Promise<Contender> {
    const { session } = this.ctx;
    let parentAttempts = 0;
    let failures = 0;
    for (;;) {
      if (this.signal.aborted) throw this.signal.reason;
      let path: string;
      try {
        this.mayOwnNode = true;
        // After a NO_NODE, the lock path goes out in the same pipeline, ahead of our node: one round trip.
        const parents = parentAttempts > 0 ? this.createLockPath() : Promise.resolve();
        const created = session.create(
          `${this.parent}/${this.prefix}`,
          this.recipe?.nodeData ?? this.ctx.nodeData,
          CREATE_MODE.EPHEMERAL_SEQUENTIAL,
        );
        path = await this.server(Promise.all([parents, created]).then(([, node]) => node));
      } catch (error) {
        if (isZkError(error, ZK_ERROR.NO_NODE) && ++parentAttempts <= MAX_PARENT_ATTEMPTS) continue;
        if (!isConnectionLoss(error) && !isSessionExpired(error)) throw error;
        // The reply was lost, not necessarily the create: look for our node by its protected name.
        const found = await this.findOwn(++failures, error);
        if (found === undefined) continue;
        path = `${this.parent}/${found}`;
      }
      this.ownPath = path;
      const reading = this.readOwnNode(path);
      const sentAt = monotonicNow();
      const children = session.getChildren(this.parent);
      children.catch(() => undefined);
      const stat = await reading;
      if (stat === null) {
        // Gone already: the session expired in between. Start over.
        this.ownPath = undefined;
        continue;
      }
      this.queued = true;
      return {
        path,
        name: path.slice(this.parent.length + 1),
        sessionId: hex(stat.ephemeralOwner),
        czxid: zxidOf(stat.czxid),
        firstListing: { children, sentAt },
      };
    }
  }

  /** Our node's Stat (its czxid is the fencing token), leaving the watch on it; null if it is gone. */
  private async readOwnNode(path: string): Promise<Stat | null> {
    let failures = 0;
    for (;;) {
      const watcher = this.ctx.ownNodes.watcherFor(path, this.ctx.session.sessionId ?? '');
      try {
        const stat = await this.server(this.ctx.session.watchNode(path, watcher));
        if (stat === null) this.ctx.ownNodes.forget(path);
        return stat;
      } catch (error) {
        this.ctx.ownNodes.forget(path);
        if (isSessionExpired(error)) return null;
        if (!isConnectionLoss(error)) throw error;
        await this.pauseAfterFailure(++failures, error);
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
        const children = await this.server(this.ctx.session.getChildren(this.parent));
        return children ? findOwnNode(children, this.request.token) : undefined;
      } catch (error) {
        if (!isConnectionLoss(error) && !isSessionExpired(error)) throw error;
        await this.pauseAfterFailure(++failures, lastError);
      }
    }
  }

  /** Resolves the time our first place was confirmed, or undefined when our node is gone. */
  private async waitForTurn(contender: Contender): Promise<number | undefined> {
    let failures = 0;
    for (;;) {
      let position: Position;
      // A counting recipe waits on the children list: the listing that counts also sets the watch.
      const listWakeup = this.recipe?.limit !== undefined ? (this.wakeup = new Wakeup()) : undefined;
      try {
        position = await this.locate(contender, listWakeup?.fire);
      } catch (error) {
        // Once queued, a brief outage should not cost us our place: retry until the signal says stop.
        if (!isConnectionLoss(error) && !isSessionExpired(error)) throw error;
        await this.pauseAfterFailure(++failures, error);
        continue;
      }
      if (position.kind === 'gone') return undefined;
      if (position.kind === 'first') return position.confirmedAt;
      if (position.kind === 'full') {
        failures = 0;
        if (position.watching) await raceAbort(listWakeup!.promise, this.signal, () => this.signal.reason);
        continue;
      }
      const wakeup = (this.wakeup = new Wakeup());
      let present: boolean;
      try {
        present =
          (await this.server(this.ctx.session.watchNode(`${this.parent}/${position.predecessor}`, wakeup.fire))) !==
          null;
      } catch (error) {
        if (!isConnectionLoss(error) && !isSessionExpired(error)) throw error;
        await this.pauseAfterFailure(++failures, error);
        continue;
      }
      failures = 0;
      // The predecessor left between our listing and the watch: list again.
      if (!present) continue;
      await raceAbort(wakeup.promise, this.signal, () => this.signal.reason);
    }
  }

  /** Lists the children (or takes the listing our create came with) and finds our place (positionIn). */
  private async locate(contender: Contender, listWatcher?: () => void): Promise<Position> {
    const { session } = this.ctx;
    const listing = contender.firstListing;
    contender.firstListing = undefined;
    const confirmedAt = listing?.sentAt ?? monotonicNow();
    const children = await this.server(
      listing?.children ??
        (listWatcher ? session.watchChildren(this.parent, listWatcher) : session.getChildren(this.parent)),
    );
    // A first listing came with our node's create, so it left no watch on the list.
    return positionIn(children, contender.name, this.request.mode, this.recipe, confirmedAt, listing === undefined);
  }

  /** Waits before a retry. An abort now means ZooKeeper kept failing, so it is a backend error. */
  private async pauseAfterFailure(failures: number, lastError: unknown): Promise<void> {
    try {
      await delay(retryBackoff(failures), this.signal);
    } catch {
      throw this.cancelledWith
        ? this.cancelledWith.error
        : new LockBackendError(
            'zookeeper',
            this.ctx.session.address,
            this.operation,
            `ZooKeeper kept failing while we waited in the queue (last error: ${(lastError as Error)?.message ?? String(lastError)})`,
            { cause: lastError },
          );
    }
  }

  private handOver(contender: Contender, confirmedAt: number): LockGrant {
    // Never grant after the abort; the catch deletes our node.
    if (this.signal.aborted) throw this.signal.reason;
    this.mayOwnNode = false;
    this.ownPath = undefined;
    const state: ZooKeeperLockState = { nodePath: contender.path, sessionId: contender.sessionId };
    return {
      fencingToken: contender.czxid,
      validUntil: validUntil(confirmedAt, this.request.ttl, this.ctx.session.sessionTimeout),
      state,
    };
  }

  /**
   * Every server call: an abort while the call is outstanding rejects at once (node-zookeeper-client queues
   * requests while disconnected, without limit). Once our node is queued and the connection is up, the
   * server is answering and the key is simply busy: the wait's own reason. Otherwise the server did not
   * answer in time: a LockBackendError, so that "busy" and "unreachable" stay distinct.
   */
  private server<T>(work: Promise<T>): Promise<T> {
    return raceAbort(work, this.signal, () => {
      if (this.cancelledWith) return this.cancelledWith.error;
      if (this.queued && this.ctx.session.isConnected) return this.signal.reason;
      return new LockBackendError(
        'zookeeper',
        this.ctx.session.address,
        this.operation,
        'the wait ended while a request to ZooKeeper was still outstanding',
        { cause: this.signal.reason },
      );
    });
  }

  private failure(error: unknown): unknown {
    if (this.signal.aborted && error === this.signal.reason) return error;
    return toZooKeeperBackendError(this.ctx.session.address, this.operation, error);
  }

  /**
   * Leaves the queue: deletes our node, or, when a create's outcome is unknown, whatever
   * node carries our token. Requests of one session run in order, so a create still in flight lands first.
   */
  private abandon(): Promise<void> {
    if (!this.mayOwnNode) return Promise.resolve();
    this.mayOwnNode = false;
    const { session } = this.ctx;
    const path = this.ownPath;
    this.ownPath = undefined;
    const cleanUp = async () => {
      if (path) {
        await session.remove(path);
        return;
      }
      const children = (await session.getChildren(this.parent)) ?? [];
      const ours = children.filter((name) => name.startsWith(this.prefix));
      await Promise.all(ours.map((name) => session.remove(`${this.parent}/${name}`)));
    };
    const cleanup = cleanUp();
    this.ctx.track(cleanup);
    // The caller hears of the failure once our node is gone (bounded), so a read right after never sees it.
    return settledWithin(cleanup, session.isConnected ? ABANDON_WAIT_MS : 0, true);
  }

  private dispose(): void {
    this.wakeup = undefined;
    this.detachUserSignal();
    this.stopSessionEvents();
  }
}
