import type { IKeyValue, IRangeRequest, ITxnRequest, Watcher } from 'etcd3';
import { CLEANUP_DEADLINE_MS, EtcdAcquisition } from '../../backends/etcd/etcd-acquisition';
import { lockPrefix } from '../../backends/etcd/etcd-key-layout';
import { EtcdLockClient, toEtcdBackendError } from '../../backends/etcd/etcd-lock-client';
import { asEtcdLockState, validUntil } from '../../backends/etcd/etcd-lock-state';
import { bytes, createRevisionIs, prefixRange, SORT_ASCEND, SORT_BY_CREATE } from '../../backends/etcd/etcd-requests';
import { delay } from '../../backends/shared/abort';
import { monotonicNow } from '../../utils/clock';
import type { CampaignRequest, ElectionBackend, ElectionGrant, LeaderInfo } from '../election-backend.interface';

/** Consecutive failed reads after which observe() gives up and errors (about 8 s of backoff). */
const MAX_OBSERVE_FAILURES = 10;

/**
 * Elections in the layout of Go's `concurrency.Election` (and so `etcdctl elect <name> <proposal>`): each
 * contender is `<prefix><lease id hex>` holding its proposal, on a lease of its own; the key with the lowest
 * create revision leads and that revision is the term. A contender waits for the deletion of the key just before
 * it, exactly as a lock waiter does, so the queue is EtcdAcquisition's (own lease kept alive while waiting, own
 * key re-read after every wake-up). The election `web` with keyPrefix `elections` is the prefix `elections/web/`.
 *
 * Each contender owns its lease (Go shares a session's lease among a session's elections): resigning revokes it,
 * and a leader whose renewals stop loses its key when the lease expires, without affecting any lock.
 */
export class EtcdElection implements ElectionBackend {
  readonly kind = 'etcd';
  readonly address: string;
  private readonly campaigns = new Set<EtcdAcquisition>();
  private readonly stops = new Set<() => void>();

  constructor(
    private readonly etcd: EtcdLockClient,
    /** The lock backend's clean-up tracking, so its close() waits for revokes we started. */
    private readonly track: (work: Promise<unknown>) => void,
  ) {
    this.address = etcd.address;
  }

  async campaign(request: CampaignRequest, signal: AbortSignal): Promise<ElectionGrant> {
    const attempt = new EtcdAcquisition(
      this.etcd,
      { namespace: request.namespace, key: request.name, token: request.token, ttl: request.ttl, mode: 'exclusive' },
      'acquire',
      this.track,
      signal,
      request.value,
    );
    this.campaigns.add(attempt);
    try {
      const grant = await attempt.acquire();
      return { term: grant.fencingToken, validUntil: grant.validUntil, state: grant.state };
    } finally {
      this.campaigns.delete(attempt);
    }
  }

  /** One keepalive of our lease and, in parallel, a check that our key is still the one we created. */
  async renew(grant: ElectionGrant, ttl: number): Promise<number | null> {
    const state = asEtcdLockState(grant.state);
    const startedAt = monotonicNow();
    try {
      const [leaseTtl, ours] = await Promise.all([
        this.etcd.keepAlive(state.leaseId, state.leaseTtlSeconds * 1000),
        this.etcd.stillOurs(state.keyPath, state.createRevision, state.leaseId),
      ]);
      if (leaseTtl <= 0 || !ours) return null;
      return validUntil(startedAt, ttl, leaseTtl);
    } catch (error) {
      throw toEtcdBackendError(this.address, 'election renew', error);
    }
  }

  /** Go's Proclaim: a put on our own key, guarded by its create revision, keeping its lease. */
  async proclaim(grant: ElectionGrant, value: string): Promise<boolean> {
    const state = asEtcdLockState(grant.state);
    try {
      return (await this.etcd.client.kv.txn(proclaimTxn(state.keyPath, state.createRevision, value, state.leaseId))).succeeded;
    } catch (error) {
      throw toEtcdBackendError(this.address, 'election proclaim', error);
    }
  }

  /** Revokes our lease: that deletes our key and nothing else, so it can never remove a successor's key. */
  async resign(grant: ElectionGrant): Promise<boolean> {
    const state = asEtcdLockState(grant.state);
    try {
      return await this.etcd.revoke(state.leaseId, { deadline: Date.now() + CLEANUP_DEADLINE_MS });
    } catch (error) {
      throw toEtcdBackendError(this.address, 'election resign', error);
    }
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
  watch(namespace: string, name: string, onChange: (leader: LeaderInfo | null) => void, onError: (error: unknown) => void): () => void {
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
      let failures = 0;
      while (!stopper.signal.aborted) {
        let read: Awaited<ReturnType<EtcdElection['readLeader']>>;
        try {
          read = await this.readLeader(prefix);
          if (stopper.signal.aborted) return;
          failures = 0;
          onChange(read.leader);
        } catch (error) {
          if (stopper.signal.aborted) return;
          if (++failures >= MAX_OBSERVE_FAILURES) {
            stop();
            return onError(toEtcdBackendError(this.address, 'election observe', error));
          }
          await delay(Math.min(1_000, 50 * 2 ** failures), stopper.signal).catch(() => undefined);
          continue;
        }
        const { leader, key: leaderKey } = read;
        await new Promise<void>((resolve) => {
          const current = this.etcd.client.watch().prefix(prefix).startRevision((read.revision + 1n).toString()).watcher();
          watcher = current;
          const next = () => {
            stopper.signal.removeEventListener('abort', next);
            if (watcher === current) {
              watcher = undefined;
              this.track(current.cancel().catch(() => undefined));
            }
            resolve();
          };
          // A proclaim is a put on the leader's key: its value comes with the event, in order, without a read.
          // A new contender's put matters only when nobody led; the leader's deletion means a new leader.
          current.on('put', (kv: IKeyValue) => {
            if (!leader) return next();
            if (kv.key.toString('utf8') === leaderKey) onChange({ value: kv.value.toString('utf8'), term: leader.term });
          });
          current.on('delete', (kv: IKeyValue) => {
            if (kv.key.toString('utf8') === leaderKey) next();
          });
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

  private async readLeader(prefix: string): Promise<{ leader: LeaderInfo | null; key: string | undefined; revision: bigint }> {
    const response = await this.etcd.client.kv.range(firstCreatedWithValue(prefix));
    const first = response.kvs[0];
    return {
      key: first?.key.toString('utf8'),
      leader: first ? { value: first.value.toString('utf8'), term: BigInt(first.create_revision) } : null,
      revision: BigInt(response.header.revision),
    };
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
