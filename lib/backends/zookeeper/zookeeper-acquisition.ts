import type { AcquireRequest, LockGrant } from '../lock-backend.interface';
import { LockBackendError } from '../../errors';
import { monotonicNow } from '../../utils/clock';
import { raceAbort } from '../../utils/abort';
import { AcquisitionControl } from './acquisition-control';
import { QueueEntry } from './queue-entry';
import { isConnectionLoss, isSessionExpired } from './zookeeper-errors';
import { ZooKeeperLockState, validUntil } from './zookeeper-lock-state';
import { contenderPrefix, lockPath, protectedPrefix } from './zookeeper-node-layout';
import { AcquisitionContext, Contender, ContenderRecipe, Position, positionIn, Wakeup } from './zookeeper-queue';

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
  private readonly parent: string;
  private readonly control: AcquisitionControl;
  /** Our node: joins the queue, and leaves it if we fail. */
  private readonly entry: QueueEntry;
  private readonly stopSessionEvents: () => void;
  private wakeup?: Wakeup;

  constructor(
    private readonly ctx: AcquisitionContext,
    private readonly request: AcquireRequest,
    operation: 'acquire' | 'tryAcquire',
    userSignal?: AbortSignal,
    private readonly recipe?: ContenderRecipe,
  ) {
    this.parent = recipe?.parent ?? lockPath(request.namespace, request.key);
    ctx.useNamespace(request.namespace);
    const prefix = recipe
      ? `${protectedPrefix(request.token)}${recipe.marker}`
      : contenderPrefix(request.token, request.mode);
    this.control = new AcquisitionControl(ctx.session, operation, userSignal);
    this.entry = new QueueEntry(ctx, this.control, request, this.parent, prefix, recipe);
    // An expired session's watches never fire: wake the waiter so it finds its node gone and joins again.
    this.stopSessionEvents = ctx.session.onEvent((event) => {
      if (event.type === 'expired') this.wakeup?.fire();
    });
  }

  private get signal(): AbortSignal {
    return this.control.signal;
  }

  /** The backend is closing: reject with `error` and leave the queue. */
  cancel(error: unknown): void {
    this.control.cancel(error);
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
        const contender = await this.entry.join();
        // Our own node's watch (set by join) wakes us too: if it is deleted while we wait, we rejoin at once.
        const stopWatchingOwnNode = this.ctx.ownNodes.onDeleted(contender.path, () => this.wakeup?.fire());
        const confirmedAt = await this.waitForTurn(contender).finally(stopWatchingOwnNode);
        if (confirmedAt !== undefined) return this.handOver(contender, confirmedAt);
        // Our node is gone; join again at the back.
        this.ctx.ownNodes.forget(contender.path);
        this.control.queued = false;
        this.entry.disown();
        if (!rejoin) return undefined;
      }
    } catch (error) {
      await this.entry.abandon();
      throw this.control.failure(error);
    } finally {
      this.dispose();
    }
  }

  async tryAcquire(): Promise<LockGrant | null> {
    try {
      const contender = await this.entry.join();
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
      await this.control.server(this.ctx.ownNodes.remove(contender.path));
      this.entry.disown();
      return null;
    } catch (error) {
      await this.entry.abandon();
      throw this.control.failure(error);
    } finally {
      this.dispose();
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
        await this.control.pauseAfterFailure(++failures, error);
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
          (await this.control.server(
            this.ctx.session.watchNode(`${this.parent}/${position.predecessor}`, wakeup.fire),
          )) !== null;
      } catch (error) {
        if (!isConnectionLoss(error) && !isSessionExpired(error)) throw error;
        await this.control.pauseAfterFailure(++failures, error);
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
    const children = await this.control.server(
      listing?.children ??
        (listWatcher ? session.watchChildren(this.parent, listWatcher) : session.getChildren(this.parent)),
    );
    // A first listing came with our node's create, so it left no watch on the list.
    return positionIn(children, contender.name, this.request.mode, this.recipe, confirmedAt, listing === undefined);
  }

  private handOver(contender: Contender, confirmedAt: number): LockGrant {
    // Never grant after the abort; the catch deletes our node.
    if (this.signal.aborted) throw this.signal.reason;
    this.entry.disown();
    const state: ZooKeeperLockState = { nodePath: contender.path, sessionId: contender.sessionId };
    return {
      fencingToken: contender.czxid,
      validUntil: validUntil(confirmedAt, this.request.ttl, this.ctx.session.sessionTimeout),
      state,
    };
  }

  private dispose(): void {
    this.wakeup = undefined;
    this.control.dispose();
    this.stopSessionEvents();
  }
}
