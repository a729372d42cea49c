import type { BackendLockEvent, LockBackend } from '../backends/lock-backend.interface';

/**
 * What a lock backend offers LeaderElection. Each backend builds one on its own client and sessions
 * (`createElectionBackend()`), so elections share the connections, leases and clean-up of its locks.
 *
 * The promises are the lock contract's, for one key per election name: at most one leader at a time; a
 * `term` that strictly increases per name across leaders; renew/proclaim/resign checked server-side against
 * the leader's own entry, so they never touch another contender's; every `validUntil` measured from just
 * before the request that won, on the monotonic clock.
 */
export interface ElectionBackend {
  /** 'memory', 'etcd', 'zookeeper', 'redis'. */
  readonly kind: string;
  readonly address: string;

  /** Joins the election and resolves once this contender leads. On abort it leaves and rejects with the reason. */
  campaign(request: CampaignRequest, signal: AbortSignal): Promise<ElectionGrant>;

  /** Keeps the leadership alive for `ttl` ms from now. Resolves the new `validUntil`, or null when it is gone. */
  renew(grant: ElectionGrant, ttl: number): Promise<number | null>;

  /** Replaces the published value while (and only while) this grant still leads. False when it no longer does. */
  proclaim(grant: ElectionGrant, value: string): Promise<boolean>;

  /** Gives the leadership up (deletes its entry if it is still ours); the next contender leads. */
  resign(grant: ElectionGrant): Promise<boolean>;

  /** The leader now, or null when nobody leads. */
  leader(namespace: string, name: string): Promise<LeaderInfo | null>;

  /**
   * Calls `onChange` with the leader now and after every change the server reports (a re-read each time, so
   * a missed intermediate state only skips a value, never leaves a stale one). `onError` ends the watch.
   * `operationTimeout` bounds each read where the client itself may wait long for a connection.
   */
  watch(
    namespace: string,
    name: string,
    onChange: (leader: LeaderInfo | null) => void,
    onError: (error: unknown) => void,
    options?: { readonly operationTimeout?: number },
  ): () => void;

  /** Optional: news the server pushes about a leader's session between renewals (ZooKeeper's session states). */
  observeGrant?(grant: ElectionGrant, listener: (event: BackendLockEvent) => void): () => void;

  /** Aborts campaigns under way. Leaves the client (the lock backend's) open. */
  close(): Promise<void>;
}

export interface CampaignRequest {
  /** LeaderElection's keyPrefix, validated like LockService's. */
  readonly namespace: string;
  /** The election name, validated like a lock key. */
  readonly name: string;
  /** What the leader publishes (etcdctl elect's proposal). */
  readonly value: string;
  /** ms the leadership stays valid without a renewal. */
  readonly ttl: number;
  /** Random owner token (a v4 UUID). */
  readonly token: string;
}

export interface ElectionGrant {
  /** Strictly increasing per election name across leaders: the fencing token of this leadership. */
  readonly term: bigint;
  /** `performance.now()` until which this contender certainly leads. */
  readonly validUntil: number;
  /** Backend-private: key path, lease, node name... */
  readonly state: unknown;
}

/** The leader of an election as any contender or observer sees it. */
export interface LeaderInfo {
  readonly value: string;
  readonly term: bigint;
}

/** Implemented by lock backends that can run elections. */
export interface ElectionCapableBackend extends LockBackend {
  /** @internal A new election view on this backend's client. LeaderElection calls it once. */
  createElectionBackend(): ElectionBackend;
}

export function supportsElections(backend: LockBackend): backend is ElectionCapableBackend {
  return typeof (backend as Partial<ElectionCapableBackend>).createElectionBackend === 'function';
}
