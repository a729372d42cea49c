/** Options of LeaderElection (`DistributedLockModule.forRoot({ elections: {...} })`). */
export interface LeaderElectionOptions {
  /**
   * Namespace of every election name, kept apart from LockService's `keyPrefix` so that a lock and an election of
   * the same name never meet. `[A-Za-z0-9_.:-]`. Default 'elections': on etcd the election `web` is the prefix
   * `elections/web/`, which is what `etcdctl elect elections/web` uses.
   */
  keyPrefix?: string;
  /**
   * ms a leader stays leader without a renewal; renewed every ttl/3. It bounds how long a crashed leader (one
   * that cannot resign) blocks a successor. Default 15 000. etcd leases are whole seconds (rounded up).
   */
  ttl?: number;
  /** Deadline in ms for one renew/proclaim/resign/leader call. The module passes its `operationTimeout`. Default 5 000. */
  operationTimeout?: number;
}

/** Per-campaign options. */
export interface CampaignOptions {
  /** What this leader publishes to observers. Default: `<hostname>/<pid>/<instanceId>` of the LockService. */
  value?: string;
  /** Stops waiting: the campaign leaves the election and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Overrides LeaderElectionOptions.ttl for this campaign. */
  ttl?: number;
}

export const DEFAULT_ELECTION_PREFIX = 'elections';
export const DEFAULT_ELECTION_TTL = 15_000;
