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
