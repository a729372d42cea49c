import type { BackendLockEvent, HeldLock, LockBackend } from '../../backends/lock-backend.interface';
import { delay } from '../../utils/abort';
import { ZooKeeperAcquisition } from '../../backends/zookeeper/zookeeper-acquisition';
import type { AcquisitionContext } from '../../backends/zookeeper/zookeeper-queue';
import { toZooKeeperBackendError } from '../../backends/zookeeper/zookeeper-errors';
import { LockNotSupportedError } from '../../errors';
import { zxidOf } from '../../backends/zookeeper/zookeeper-lock-state';
import { lockPath, sortContenders } from '../../backends/zookeeper/zookeeper-node-layout';
import { ObserveFailures } from '../observe-failures';
import type { CampaignRequest, ElectionBackend, ElectionGrant, LeaderInfo } from '../election-backend.interface';

/** Curator LeaderLatch's node name (LeaderLatch.LOCK_NAME), after its protected `_c_<uuid>-` prefix. */
export const LATCH_MARKER = 'latch-';

/**
 * Elections in the layout of Curator's LeaderLatch: each participant is an ephemeral sequential node
 * `<latch path>/_c_<uuid>-latch-<10-digit sequence>` whose data is its id (our proposal), and the node that sorts
 * first by sequence leads. So `new LeaderLatch(client, "/elections/web", id)` and campaign('web') take turns,
 * and each sees the other's id as the leader's value. The value is fixed per campaign (see proclaim). The queue is ZooKeeperAcquisition's (watch only the
 * predecessor, find our node by its protected name after a lost reply).
 *
 * The term is the leader node's creation zxid, not its sequence number: the sequence restarts at 0 when the
 * latch path is deleted (Curator creates it as a container node, which the server removes once empty), while
 * zxids only grow. Renewal, resign and session news are the lock backend's (`extend`, `release`, `observe`):
 * a leader is exactly a lock holder whose node is first.
 */
export class ZooKeeperElection implements ElectionBackend {
  readonly kind = 'zookeeper';
  readonly address: string;
  private readonly campaigns = new Set<ZooKeeperAcquisition>();
  private readonly stops = new Set<() => void>();

  constructor(
    private readonly backend: LockBackend,
    private readonly ctx: AcquisitionContext,
  ) {
    this.address = backend.address;
  }

  async campaign(request: CampaignRequest, signal: AbortSignal): Promise<ElectionGrant> {
    const lock = {
      namespace: request.namespace,
      key: request.name,
      token: request.token,
      ttl: request.ttl,
      mode: 'exclusive' as const,
    };
    const attempt = new ZooKeeperAcquisition(this.ctx, lock, 'acquire', signal, {
      marker: LATCH_MARKER,
      nodeData: Buffer.from(request.value, 'utf8'),
    });
    this.campaigns.add(attempt);
    try {
      const grant = await attempt.acquire();
      const held: HeldLock = { ...lock, fencingToken: grant.fencingToken, state: grant.state };
      return { term: grant.fencingToken, validUntil: grant.validUntil, state: held };
    } finally {
      this.campaigns.delete(attempt);
    }
  }

  renew(grant: ElectionGrant, ttl: number): Promise<number | null> {
    return this.backend.extend(grant.state as HeldLock, ttl);
  }

  /**
   * Refused: Curator's LeaderLatch watches its predecessor with getData and acts only on NodeDeleted, so a data
   * change on our node would use up a Java follower's one-shot watch and leave it waiting forever after we resign.
   * The value is fixed per campaign, as a LeaderLatch id is: resign and campaign again to publish another.
   */
  async proclaim(): Promise<boolean> {
    throw new LockNotSupportedError(
      'zookeeper',
      'proclaim() on a leader election',
      "a Curator LeaderLatch follower stops watching when its predecessor's data changes. Resign and campaign again with the new value.",
    );
  }

  resign(grant: ElectionGrant): Promise<boolean> {
    return this.backend.release(grant.state as HeldLock);
  }

  observeGrant(grant: ElectionGrant, listener: (event: BackendLockEvent) => void): () => void {
    return this.backend.observe!(grant.state as HeldLock, listener);
  }

  async leader(namespace: string, name: string): Promise<LeaderInfo | null> {
    try {
      return (await this.readLeader(lockPath(namespace, name))) ?? null;
    } catch (error) {
      throw toZooKeeperBackendError(this.address, 'election leader', error);
    }
  }

  /**
   * LeaderLatch's getLeader() after every change: a watch on the children and one on the leader's node.
   *
   * Watches belong to a session: a new one (after an expiry) has none of them, and they cannot tell what changed
   * while the connection was down. So every session event reads again. A read while not connected would only
   * queue until the server is back, so it fails at once and backs off (ObserveFailures): a server that stays away
   * ends the observation with an error, as on etcd.
   */
  watch(
    namespace: string,
    name: string,
    onChange: (leader: LeaderInfo | null) => void,
    onError: (error: unknown) => void,
  ): () => void {
    const parent = lockPath(namespace, name);
    const { session } = this.ctx;
    const stopper = new AbortController();
    let wake: (() => void) | undefined;
    const stopEvents = session.onEvent(() => wake?.());
    // An observer may be this backend's first use: its client connects then.
    session.startConnecting();
    const stop = () => {
      stopper.abort();
      stopEvents();
      this.stops.delete(stop);
    };
    this.stops.add(stop);
    const follow = async () => {
      const failures = new ObserveFailures();
      while (!stopper.signal.aborted) {
        let fire!: () => void;
        const changed = new Promise<void>((resolve) => (fire = resolve));
        wake = fire;
        try {
          if (!session.isConnected) throw new Error(session.describeConnection() ?? 'not connected to ZooKeeper');
          const leader = await this.readLeader(parent, fire);
          if (stopper.signal.aborted) return;
          failures.reset();
          onChange(leader === undefined ? null : leader);
          if (stopper.signal.aborted) return; // unsubscribed inside onChange
          // No latch path yet: watch for its creation rather than create it, so that observing a name leaves no
          // node behind. Created in the meantime: read again at once.
          if (leader === undefined && (await this.ctx.session.watchExists(parent, fire)) !== null) continue;
        } catch (error) {
          if (stopper.signal.aborted) return;
          const pause = failures.next();
          if (pause === undefined) {
            stop();
            return onError(toZooKeeperBackendError(this.address, 'election observe', error));
          }
          await delay(pause, stopper.signal).catch(() => undefined);
          continue;
        }
        // ZooKeeper cannot remove a watch in this protocol version: a late one-shot fire is harmless.
        await new Promise<void>((resolve) => {
          stopper.signal.addEventListener('abort', () => resolve(), { once: true });
          void changed.then(resolve);
        });
      }
    };
    void follow();
    return stop;
  }

  async close(): Promise<void> {
    for (const stop of [...this.stops]) stop();
    for (const attempt of this.campaigns) attempt.cancel(new Error('the election backend is closing'));
  }

  /**
   * The first participant by sequence and its data; null when nobody participates, undefined when the latch path
   * does not exist. With `changed`, leaves one-shot watches on the children and on the leader's node.
   */
  private async readLeader(parent: string, changed?: () => void): Promise<LeaderInfo | null | undefined> {
    const { session } = this.ctx;
    for (;;) {
      const children = changed
        ? await session.watchChildren(parent, () => changed())
        : await session.getChildren(parent);
      if (children === null) return changed ? undefined : null;
      const [first] = sortContenders(children, [LATCH_MARKER]);
      if (first === undefined) return null;
      const node = await session.getData(`${parent}/${first}`, changed && (() => changed()));
      // The leader left between the two reads: read again.
      if (node === null) continue;
      return { value: node.data.toString('utf8'), term: zxidOf(node.stat.czxid) };
    }
  }
}
