import { LockBackendError, LockError } from '../../errors';

/**
 * ZooKeeper's own error codes (KeeperException.Code), as node-zookeeper-client reports them in
 * `error.code`. Kept here so that a backend built on an app's client needs nothing else from the package.
 */
export const ZK_ERROR = {
  CONNECTION_LOSS: -4,
  OPERATION_TIMEOUT: -7,
  NO_NODE: -101,
  NO_AUTH: -102,
  NODE_EXISTS: -110,
  NOT_EMPTY: -111,
  SESSION_EXPIRED: -112,
  INVALID_ACL: -114,
  AUTH_FAILED: -115,
} as const;

/** The numeric code of a node-zookeeper-client Exception, or undefined for anything else. */
export function zkErrorCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

export function isZkError(error: unknown, code: number): boolean {
  return zkErrorCode(error) === code;
}

/** The request may or may not have reached the server; the session may still be alive. */
export function isConnectionLoss(error: unknown): boolean {
  const code = zkErrorCode(error);
  return code === ZK_ERROR.CONNECTION_LOSS || code === ZK_ERROR.OPERATION_TIMEOUT;
}

/** The session, and every ephemeral node it owned, is gone. */
export function isSessionExpired(error: unknown): boolean {
  return zkErrorCode(error) === ZK_ERROR.SESSION_EXPIRED;
}

/** Maps anything a ZooKeeper call threw to a LockBackendError naming the server; LockErrors pass through. */
export function toZooKeeperBackendError(address: string, operation: string, error: unknown): unknown {
  if (error instanceof LockError || error instanceof TypeError) return error;
  return new LockBackendError('zookeeper', address, operation, describe(error), { cause: error });
}

function describe(error: unknown): string {
  const code = zkErrorCode(error);
  if (code === ZK_ERROR.NO_AUTH || code === ZK_ERROR.AUTH_FAILED) {
    return `${messageOf(error)}: the client lacks permission on the lock path (check its ACLs and addAuthInfo)`;
  }
  if (code === ZK_ERROR.INVALID_ACL) {
    return `${messageOf(error)}: the server refused the backend's acl for a new node (an 'auth' ACL needs credentials: give the backend authInfo, or call addAuthInfo on your client)`;
  }
  // The backend reads a missing node as an answer everywhere but when it creates the namespace's root.
  if (code === ZK_ERROR.NO_NODE) {
    return `${messageOf(error)}: a parent of the lock path is missing; with a chroot in the connection string (host:2181/app), create that node first`;
  }
  if (code === ZK_ERROR.SESSION_EXPIRED) {
    return `${messageOf(error)}: the ZooKeeper session expired while the request was outstanding (its lock nodes are gone)`;
  }
  return messageOf(error);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
