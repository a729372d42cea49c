import type { Stat } from 'node-zookeeper-client';
import { hex } from './zookeeper-client-facts';
import { zxidOf } from './zookeeper-lock-state';
import { namespacePath, SEMAPHORE_GATE, SEMAPHORE_LEASES } from './zookeeper-node-layout';
import type { ZooKeeperSession } from './zookeeper-session';

/** How long an emptied lock path may stay: a key locked again within it reuses the path. */
const SWEEP_DELAY_MS = 10_000;
/** More emptied paths than this are swept at once, so memory stays bounded under a stream of new keys. */
const MAX_PENDING = 1_000;
/** The default ZooKeeperLockBackendOptions.reapInterval: how often the namespaces in use are reaped, ms. */
export const DEFAULT_REAP_INTERVAL_MS = 300_000;
/** The longest reapInterval: its jittered delay must still fit a timer. */
export const MAX_REAP_INTERVAL_MS = 86_400_000;
/**
 * Lock paths looked at per round trip. A session's requests are answered in order, so a renewal waits behind at
 * most one batch rather than behind every path of a namespace.
 */
const BATCH = 100;
/**
 * When reaping, a node created less than this long ago (by the server's clock) is not deleted: whoever made it may
 * be about to create their node in it. Curator re-creates a missing parent and creates its node in a second
 * request, and its semaphore fails rather than retries when the parent vanished in between.
 */
const MIN_AGE_MS = 5_000;
/** What sits under a semaphore's lock path (InterProcessSemaphoreV2's layout, and ours). */
const SEMAPHORE_PARTS: ReadonlySet<string> = new Set([SEMAPHORE_GATE, SEMAPHORE_LEASES]);
const NO_SESSION = '0000000000000000';

/** A lock path to look at, with the fencing token of our node that was in it (see LockPathSweeper.paths). */
type PathToSweep = readonly [path: string, bound: bigint | undefined];

/**
 * Deletes the lock paths our nodes left empty (released, or deleted by the server with an expired session), a
 * little later and in batches. Deleting at once
 * would make a hot key pay for re-creating its path on every acquire (about 2.7x fewer cycles per second);
 * never deleting would leave one empty node behind for every key ever locked. Curator avoids both with
 * container nodes, which the server reaps itself, but node-zookeeper-client cannot create containers.
 *
 * A process that dies leaves its paths to others: its nodes go with its session, but nobody sweeps the paths.
 * So, like Curator's ChildReaper, every `reapInterval` the namespaces this backend has used are listed and their
 * idle lock paths deleted (reap).
 *
 * Only an idle lock path is deleted (removeIfIdle): a persistent node with no data and no children, at the data
 * version we read, and one that is not new: for a sweep, one that existed while our node was in it (its czxid is
 * at most our node's fencing token, a zxid it had then), so not one someone re-created since; for a reap, one at
 * least MIN_AGE_MS old. ZooKeeper refuses to delete a node with children, so a path someone queued on meanwhile
 * (Curator included) stays; a contender of ours whose create finds the path just deleted creates it again. The
 * timers are unref'd; close() sweeps what is left.
 */
export class LockPathSweeper {
  /**
   * Lock paths that may be idle, to look at in the next sweep, each with the fencing token of our node that was in
   * it (undefined when unknown: a node the server deleted with an expired session; then MIN_AGE_MS applies).
   */
  private readonly paths = new Map<string, bigint | undefined>();
  /** Paths added since the last sweep (not those kept for being too young). */
  private fresh = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly namespaces = new Set<string>();
  private reapTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly session: ZooKeeperSession,
    private readonly track: (work: Promise<unknown>) => void,
    private readonly reapInterval = DEFAULT_REAP_INTERVAL_MS,
  ) {}

  /**
   * Our node at `nodePath`, granted with `fencingToken`, is gone: its lock path (a semaphore's too, above
   * `leases/`) may be idle now.
   */
  addParentsOf(nodePath: string, fencingToken?: bigint): void {
    const lockPath = lockPathOf(nodePath);
    if (lockPath === undefined) return;
    const isNew = !this.paths.has(lockPath);
    this.paths.set(lockPath, latest(this.paths.get(lockPath), fencingToken));
    if (isNew && ++this.fresh >= MAX_PENDING) this.track(this.sweep());
    else this.scheduleSweep();
  }

  /** Deletes every pending lock path that is idle; one too young for that is kept for the next sweep. */
  async sweep(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.fresh = 0;
    const batch = [...this.paths];
    this.paths.clear();
    for (const [young, bound] of await this.removeAllIfIdle(batch)) this.paths.set(young, bound);
    if (this.paths.size > 0 && !this.closed) this.scheduleSweep();
  }

  /** This backend locks in `namespace`: reap it from now on. */
  use(namespace: string): void {
    if (this.namespaces.has(namespace) || this.closed) return;
    this.namespaces.add(namespace);
    this.scheduleReap();
  }

  /**
   * Deletes the idle lock paths of every namespace in use, whoever left them. Skipped while disconnected;
   * failures are ignored, as the next round retries.
   */
  async reap(): Promise<void> {
    for (const namespace of this.namespaces) {
      if (!this.session.isConnected) return;
      const root = namespacePath(namespace);
      const children = await this.session.getChildren(root).catch(() => null);
      if (children) await this.removeAllIfIdle(children.map((name): PathToSweep => [`${root}/${name}`, undefined]));
    }
  }

  /** Stops reaping and sweeping later (the backend is closing; it sweeps once more itself). */
  stop(): void {
    this.closed = true;
    clearTimeout(this.reapTimer);
    this.reapTimer = undefined;
  }

  /** removeIfIdle for each path and bound, a batch at a time; resolves those kept for being too young. */
  private async removeAllIfIdle(paths: readonly PathToSweep[]): Promise<PathToSweep[]> {
    const young: PathToSweep[] = [];
    for (let at = 0; at < paths.length && this.session.isConnected; at += BATCH) {
      const batch = paths.slice(at, at + BATCH);
      const outcomes = await Promise.all(
        batch.map(([path, bound]) => this.removeIfIdle(path, bound).catch(() => 'gone' as const)),
      );
      outcomes.forEach((outcome, index) => outcome === 'young' && young.push(batch[index]));
    }
    return young;
  }

  /**
   * Deletes `path` when it is an idle lock path, after a semaphore's `leases` and `locks` beneath it when those are
   * idle too. `bound`: see `paths`. 'young' when something was kept for being too young (worth another look later).
   */
  private async removeIfIdle(
    path: string,
    bound: bigint | undefined,
    parts = true,
  ): Promise<'young' | 'gone' | 'kept'> {
    const stat = await this.session.exists(path);
    if (!stat) return 'gone';
    const state = idleness(stat, bound);
    if (state !== 'idle') return state;
    if (stat.numChildren > 0) {
      // Only a semaphore's parts may be under it (two nodes at most); contenders mean it is in use.
      if (!parts || stat.numChildren > SEMAPHORE_PARTS.size) return 'kept';
      const children = (await this.session.getChildren(path)) ?? [];
      if (children.some((name) => !SEMAPHORE_PARTS.has(name))) return 'kept';
      const outcomes = await Promise.all(children.map((name) => this.removeIfIdle(`${path}/${name}`, bound, false)));
      if (outcomes.includes('young')) return 'young';
      if (outcomes.includes('kept')) return 'kept';
    }
    await this.session.remove(path, stat.version).catch(() => false);
    return 'gone';
  }

  private scheduleSweep(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => this.track(this.sweep()), SWEEP_DELAY_MS);
    this.timer.unref();
  }

  private scheduleReap(): void {
    if (this.reapTimer || this.closed || this.reapInterval <= 0) return;
    // Jittered, so that instances started together do not list the same namespace at the same moment.
    const delay = this.reapInterval * (0.75 + Math.random() * 0.5);
    this.reapTimer = setTimeout(() => {
      this.reapTimer = undefined;
      const round = this.reap();
      this.track(round);
      void round.finally(() => this.scheduleReap());
    }, delay);
    this.reapTimer.unref();
  }
}

/**
 * Whether a node may be deleted as an idle lock path, looking at it alone: persistent and without data (an
 * ephemeral node or one with data is someone's, never a lock path), and not new (see LockPathSweeper).
 */
function idleness(stat: Stat, bound: bigint | undefined): 'idle' | 'young' | 'kept' {
  if (hex(stat.ephemeralOwner) !== NO_SESSION || stat.dataLength > 0) return 'kept';
  // Created after our node was granted in it: someone re-created it since, and may be about to use it.
  if (bound !== undefined) return zxidOf(stat.czxid) <= bound ? 'idle' : 'kept';
  const createdAt = Number(Buffer.from(stat.ctime).readBigInt64BE(0));
  return Date.now() - createdAt >= MIN_AGE_MS ? 'idle' : 'young';
}

/** The later of two of our grants' tokens (the path existed at both), or whichever is known. */
function latest(a: bigint | undefined, b: bigint | undefined): bigint | undefined {
  if (a === undefined) return b;
  return b === undefined || a > b ? a : b;
}

/** `/<namespace>/<key>` of a node anywhere under a lock path (a semaphore's lease is two levels below). */
function lockPathOf(nodePath: string): string | undefined {
  const segments = nodePath.split('/');
  return segments.length >= 3 ? segments.slice(0, 3).join('/') : undefined;
}
