/**
 * A node-zookeeper-client `Client`, described by a few of the members the backend uses instead of imported
 * from that package, so that our type declarations need it neither (nor its @types) in an app that uses
 * another backend. A real client fits as it is; the backend checks the rest when it is constructed.
 */
export interface ZooKeeperClient {
  connect(): void;
  close(): void;
  getState(): object;
  getSessionId(): Uint8Array;
  getSessionTimeout(): number;
}

/**
 * One ACL entry for the nodes the backend creates: node-zookeeper-client's `new ACL(Permission.ALL, new
 * Id('digest', 'user:<base64 sha1>'))`, one of its constants' entries (`ACL.CREATOR_ALL_ACL`), or the same shape
 * as a plain object.
 */
export interface ZooKeeperAcl {
  /** A bit mask of `Permission` (READ 1, WRITE 2, CREATE 4, DELETE 8, ADMIN 16, ALL 31). */
  readonly permission: number;
  readonly id: { readonly scheme: string; readonly id: string };
}

/** Credentials the backend adds to every client it creates (`client.addAuthInfo(scheme, auth)`). */
export interface ZooKeeperAuthInfo {
  /** e.g. `'digest'`. */
  readonly scheme: string;
  /** e.g. `'user:password'` for digest. */
  readonly auth: string | Uint8Array;
}
