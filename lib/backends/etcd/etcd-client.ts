/**
 * An etcd3 `Etcd3` client, described by the members the backend uses instead of imported from etcd3, so that
 * our type declarations need no etcd3 in an app that uses another backend. A real `Etcd3` fits as it is; the
 * backend checks these members when it is constructed and then calls them through etcd3's own types.
 */
export interface EtcdClient {
  /** The raw KV client (txn, range). */
  readonly kv: object;
  /** The raw lease client (grant, keepalive, revoke). */
  readonly leaseClient: object;
  watch(): unknown;
  close(): void;
}

/**
 * etcd3's `IOptions`, for a client the backend creates. The fields we read are spelled out; every other etcd3
 * option (`credentials`, `grpcOptions`, `faultHandling`, ...) passes through as given.
 */
export interface EtcdConnectionOptions {
  /** One endpoint or every member of the cluster, e.g. 'http://127.0.0.1:2379'. */
  hosts: string | string[];
  auth?: { username: string; password: string };
  dialTimeout?: number;
  // `any`, not `unknown`: etcd3's IOptions is an interface, which TypeScript only matches to an `any` index.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [option: string]: any;
}
