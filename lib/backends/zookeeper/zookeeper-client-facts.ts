import type { Client } from 'node-zookeeper-client';

/** What the ZooKeeper wire protocol and node-zookeeper-client call things, for the session and its callers. */

/** Codes of node-zookeeper-client's State objects (ZooKeeper's KeeperState). */
export const STATE = { DISCONNECTED: 0, SYNC_CONNECTED: 3, AUTH_FAILED: 4, EXPIRED: -122 } as const;
/** ZooKeeper's CreateMode flags. */
export const CREATE_MODE = { PERSISTENT: 0, EPHEMERAL_SEQUENTIAL: 3 } as const;

/** The session id as 16 hex digits, the way ZooKeeper logs it (and the Stat's ephemeralOwner). */
export function sessionIdOf(client: Client): string {
  return hex(client.getSessionId());
}

export function hex(bytes: Buffer): string {
  return Buffer.from(bytes).toString('hex');
}

/** The connection string of an app's client (node-zookeeper-client keeps it on a private field). */
export function readConnectionString(client: Client): string {
  const parser = (
    client as unknown as { connectionManager?: { connectionStringParser?: { getConnectionString?(): string } } }
  ).connectionManager?.connectionStringParser;
  return parser?.getConnectionString?.() ?? 'unknown ZooKeeper ensemble';
}

/** `host:port,...[/chroot]` without any `user:password@` someone may have put in. */
export function describeConnectionString(connectionString: string): string {
  return connectionString
    .split(',')
    .map((server) => server.trim().replace(/^[^@/]*@/, ''))
    .join(',');
}
