import type { IKeyValue, IRangeRequest, ITxnRequest, Watcher } from 'etcd3';
import type { HeldLock } from '../../backends/lock-backend.interface';
import { EtcdAcquisition } from '../../backends/etcd/etcd-acquisition';
import type { EtcdHeldLocks } from '../../backends/etcd/etcd-held-locks';
import type { EtcdSessions } from '../../backends/etcd/etcd-sessions';
import { lockPrefix } from '../../backends/etcd/etcd-key-layout';
import { EtcdLockClient, toEtcdBackendError } from '../../backends/etcd/etcd-lock-client';
import { asEtcdLockState } from '../../backends/etcd/etcd-lock-state';
import { bytes, createRevisionIs, prefixRange, SORT_ASCEND, SORT_BY_CREATE } from '../../backends/etcd/etcd-requests';
import { delay } from '../../utils/abort';
import { ObserveFailures } from '../observe-failures';
import type { CampaignRequest, ElectionBackend, ElectionGrant, LeaderInfo } from '../election-backend.interface';

/**
 * Elections in the layout of Go's `concurrency.Election` (and so `etcdctl elect <name> <proposal>`): each
 * contender is `<prefix><lease id hex>` holding its proposal; the key with the lowest create revision leads and
 * that revision is the term. A contender waits for the deletion of the key just before it, exactly as a lock
 * waiter does, so the queue is EtcdAcquisition's. As in Go, the key lives on a session lease shared with this
 * backend's locks (EtcdSessions keeps it alive): renewing checks that our key is still there, and resigning
 * deletes our key by its create revision, never the lease, so it can never remove a successor's key or a lock.
 * The election `web` with keyPrefix `elections` is the prefix `elections/web/`.
 */
export class EtcdElection implements ElectionBackend {
  readonly kind = 'etcd';
  readonly address: string;
  private readonly campaigns = new Set<EtcdAcquisition>();
  private readonly stops = new Set<() => void>();

  /** What the lock backend's held-lock renewal and release need, per leadership (keyed by its grant state). */
  private readonly held = new WeakMap<object, HeldLock>();

  constructor(
    private readonly etcd: EtcdLockClient,
    private readonly sessions: EtcdSessions,
    private readonly heldLocks: EtcdHeldLocks,
    /** The lock backend's clean-up tracking, so its close() waits for work we started. */
    private readonly track: (work: Promise<unknown>) => void,
  ) {
    this.address = etcd.address;
  }

  async campaign(request: CampaignRequest, signal: AbortSignal): Promise<ElectionGrant> {
    const lock = {
      namespace: request.namespace,
      key: request.name,
      token: request.token,
      ttl: request.ttl,
      mode: 'exclusive',
    } as const;
    const attempt = new EtcdAcquisition(
      this.etcd,
      this.sessions,
      lock,
      'election campaign',
      this.track,
      signal,
      request.value,
    );
    this.campaigns.add(attempt);
    try {
      const grant = await attempt.acquire();
      this.held.set(grant.state as object, { ...lock, fencingToken: grant.fencingToken, state: grant.state });
      return { term: grant.fencingToken, validUntil: grant.validUntil, state: grant.state };
    } finally {
      this.campaigns.delete(attempt);
    }
  }

  /** The lock renewal: one keepalive of the session lease and a check that our key is still the one we created. */
  async renew(grant: ElectionGrant, ttl: number): Promise<number | null> {
    const [result] = await this.heldLocks.extendMany([{ lock: this.heldLock(grant), ttl }]);
    if (result instanceof Error) throw toEtcdBackendError(this.address, 'election renew', result);
    return result;
  }

  /** Go's Proclaim: a put on our own key, guarded by its create revision, keeping its lease. */
  async proclaim(grant: ElectionGrant, value: string): Promise<boolean> {
    const state = asEtcdLockState(grant.state);
    try {
      return (await this.etcd.client.kv.txn(proclaimTxn(state.keyPath, state.createRevision, value, state.leaseId)))
        .succeeded;
    } catch (error) {
      throw toEtcdBackendError(this.address, 'election proclaim', error);
    }
  }

  /** Deletes our key by its create revision (Go's Resign), leaving the shared session lease to the others on it. */
  async resign(grant: ElectionGrant): Promise<boolean> {
    try {
      return await this.heldLocks.release(this.heldLock(grant));
    } catch (error) {
      throw toEtcdBackendError(this.address, 'election resign', error);
    }
  }

  private heldLock(grant: ElectionGrant): HeldLock {
    const lock = this.held.get(grant.state as object);
    if (!lock) throw new TypeError('etcd election: this leadership was not granted by this backend.');
    return lock;
  }

  async leader(namespace: string, name: string): Promise<LeaderInfo | null> {
    try {
      return (await this.readLeader(lockPrefix(namespace, name))).leader;
    } catch (error) {
      throw toEtcdBackendError(this.address, 'election leader', error);
    }
  }

  /**
   * Go's Observe: read the first-created key, then watch the prefix from the revision after that read. Puts on
   * the leader's key are its proclaimed values, reported in order; its deletion (or a watch that can no longer
   * vouch for its events) triggers the next read.
   */
  watch(
    namespace: string,
    name: string,
    onChange: (leader: LeaderInfo | null) => void,
    onError: (error: unknown) => void,
  ): () => void {
    const prefix = lockPrefix(namespace, name);
    const stopper = new AbortController();
    let watcher: Watcher | undefined;
    const stop = () => {
      stopper.abort();
      this.stops.delete(stop);
      if (watcher) this.track(watcher.cancel().catch(() => undefined));
      watcher = undefined;
    };
    this.stops.add(stop);
    const follow = async () => {
      const failures = new ObserveFailures();
      while (!stopper.signal.aborted) {
        let read: Awaited<ReturnType<EtcdElection['readContenders']>>;
        try {
          read = await this.readContenders(prefix);
          if (stopper.signal.aborted) return;
          failures.reset();
        } catch (error) {
          if (stopper.signal.aborted) return;
          const pause = failures.next();
          if (pause === undefined) {
            stop();
            return onError(toEtcdBackendError(this.address, 'election observe', error));
          }
          await delay(pause, stopper.signal).catch(() => undefined);
          continue;
        }
        const contenders = new ElectionContenders(read.contenders);
        onChange(contenders.leader());
        // A subscriber that had what it wanted unsubscribes inside onChange: create no watcher for it.
        if (stopper.signal.aborted) return;
        await new Promise<void>((resolve) => {
          const current = this.etcd.client
            .watch()
            .prefix(prefix)
            .startRevision((read.revision + 1n).toString())
            .watcher();
          watcher = current;
          const next = () => {
            stopper.signal.removeEventListener('abort', next);
            if (watcher === current) {
              watcher = undefined;
              this.track(current.cancel().catch(() => undefined));
            }
            resolve();
          };
          // Every event is applied, in order, to the contenders read above, so each change of leader is reported
          // as it happened, also several in one batch: a resignation then a new campaign of the same process (its
          // key has the same name, a new create revision) reports the vacancy, then the new leader with its term.
          // A proclaim is a put on the leader's key: reported with its value.
          const apply = (change: () => boolean) => {
            if (watcher !== current) return;
            const before = contenders.leader();
            const touchedLeader = change();
            const after = contenders.leader();
            if (touchedLeader || !sameLeader(before, after)) onChange(after);
          };
          current.on('put', (kv: IKeyValue) => apply(() => contenders.put(kv)));
          current.on('delete', (kv: IKeyValue) => apply(() => contenders.delete(kv)));
          current.on('error', next);
          current.on('disconnected', next);
          stopper.signal.addEventListener('abort', next, { once: true });
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

  private async readLeader(prefix: string): Promise<{ leader: LeaderInfo | null }> {
    const response = await this.etcd.client.kv.range(firstCreatedWithValue(prefix));
    const first = response.kvs[0];
    return { leader: first ? { value: first.value.toString('utf8'), term: BigInt(first.create_revision) } : null };
  }

  /** Every contender under `prefix` (an election has a handful), and the revision they were read at. */
  private async readContenders(prefix: string): Promise<{ contenders: readonly IKeyValue[]; revision: bigint }> {
    const response = await this.etcd.client.kv.range(prefixRange(prefix));
    return { contenders: response.kvs, revision: BigInt(response.header.revision) };
  }
}

/** The key under `prefix` with the lowest create revision, value included: the leader (Go's `WithFirstCreate`). */
function firstCreatedWithValue(prefix: string): IRangeRequest {
  return { ...prefixRange(prefix), sort_target: SORT_BY_CREATE, sort_order: SORT_ASCEND, limit: 1 };
}

function proclaimTxn(key: string, createRevision: string, value: string, leaseId: string): ITxnRequest {
  return {
    compare: [createRevisionIs(key, createRevision)],
    success: [{ request_put: { key: bytes(key), value: bytes(value), lease: leaseId } }],
    failure: [],
  };
}

/** The contenders of one election as a watch replays them: the leader is the key with the lowest create revision. */
class ElectionContenders {
  private readonly byKey = new Map<string, { value: string; term: bigint }>();

  constructor(initial: readonly IKeyValue[]) {
    for (const kv of initial) this.put(kv);
  }

  /** Whether the put was on the leader's key (a proclaim, or the first contender). */
  put(kv: IKeyValue): boolean {
    const key = kv.key.toString('utf8');
    this.byKey.set(key, { value: kv.value.toString('utf8'), term: BigInt(kv.create_revision) });
    return this.leaderKey() === key;
  }

  /** Never "on the leader": a deletion changes who leads, which the caller compares. */
  delete(kv: IKeyValue): boolean {
    this.byKey.delete(kv.key.toString('utf8'));
    return false;
  }

  leader(): LeaderInfo | null {
    const key = this.leaderKey();
    return key === undefined ? null : { ...this.byKey.get(key)! };
  }

  private leaderKey(): string | undefined {
    let first: string | undefined;
    for (const [key, { term }] of this.byKey)
      if (first === undefined || term < this.byKey.get(first)!.term) first = key;
    return first;
  }
}

function sameLeader(a: LeaderInfo | null, b: LeaderInfo | null): boolean {
  return a === b || (a !== null && b !== null && a.term === b.term && a.value === b.value);
}
