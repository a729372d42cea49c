/** Where the bench's own servers listen. Passed to forked workers as JSON. */
export interface BenchEnv {
  readonly redisUrl: string;
  readonly etcdEndpoint: string;
  /** `127.0.0.1:<port>`, what node-zookeeper-client takes. */
  readonly zookeeperConnectionString: string;
}

export interface AdapterOptions {
  /** Lock validity in ms (etcd rounds up to whole seconds). */
  readonly ttl: number;
  /** Keep held locks alive (scenario 4). Adapters without automatic renewal ignore it. */
  readonly renew?: boolean;
}

/** One lock library behind the same three calls, so every scenario drives every library the same way. */
export interface LockAdapter<Handle = unknown> {
  readonly name: string;
  /** Resolves once the lock is held, waiting (with the library's own retry policy) while it is busy. */
  acquire(key: string): Promise<Handle>;
  release(handle: Handle): Promise<void>;
  /** Whether a held lock was lost (renewal failed). Only asked in the renewal scenario. */
  isLost?(handle: Handle): boolean;
  /** Closes every connection the adapter opened. */
  close(): Promise<void>;
}

/** 'diagnostic' rows explain a figure (e.g. our backend without the core) and never count as a peer or limit. */
export type Role = 'ours' | 'peer' | 'limit' | 'diagnostic';
export type Store = 'redis' | 'etcd' | 'zookeeper';

export interface AdapterSpec {
  readonly name: string;
  readonly store: Store;
  readonly role: Role;
  /** How the library waits when the lock is busy, for the reports. */
  readonly waiting: string;
  /** Whether acquire() waits for a busy key (scenarios 2 and 3 need it). */
  readonly waits: boolean;
  /** Whether it renews held locks by itself (scenario 4). */
  readonly renews: boolean;
  create(env: BenchEnv, options: AdapterOptions): Promise<LockAdapter>;
}
