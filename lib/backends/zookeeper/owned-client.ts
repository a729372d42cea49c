import type { Client } from 'node-zookeeper-client';
import { performance } from 'node:perf_hooks';

/**
 * What we do to node-zookeeper-client clients the backend creates itself (never to an application's client),
 * through its private ConnectionManager, to make up for gaps in the library: it has no read timeout, it
 * misbehaves when closed before it has connected, and it can throw from its socket handler on a reply it misreads.
 */

/** node-zookeeper-client's private ConnectionManager states. */
const CONNECTION_CONNECTING = 1;
const CONNECTION_CONNECTED = 2;
const CONNECTION_CLOSING = -1;
const CONNECTION_CLOSED = -2;
/** How long close() waits for our own client to say goodbye to the server before it drops the socket. */
const CLOSE_GRACE_MS = 2_000;

/** The parts of node-zookeeper-client's private ConnectionManager that we use. */
interface ConnectionManagerInternals {
  state: number;
  socket?: { destroy(): void };
  connectTimeoutHandler?: NodeJS.Timeout | null;
  setState(state: number): void;
  onSocketConnected(): void;
  // A function property: we save and call the client's own handler with its manager as `this`.
  onSocketData: (this: ConnectionManagerInternals, buffer: Buffer) => void;
  on(event: 'state', listener: () => void): void;
  removeListener(event: 'state', listener: () => void): void;
}

/**
 * The client was closed (by its owner: for an application's client, the app). node-zookeeper-client's public
 * state then reads like a dropped connection, which it retries; only its private manager tells them apart.
 */
export function isClientClosed(client: Client): boolean {
  const state = internalsOf(client)?.state;
  return state === CONNECTION_CLOSED || state === CONNECTION_CLOSING;
}

function internalsOf(client: Client): ConnectionManagerInternals | undefined {
  return (client as unknown as { connectionManager?: ConnectionManagerInternals }).connectionManager;
}

/**
 * node-zookeeper-client has no read timeout: when the server or the network goes silent without closing the
 * socket (a partition, a hung host), it waits for TCP to give up, which takes many minutes, while the session
 * expires on the server; and a handshake whose reply never comes waits forever. Like the Java client, we drop
 * a connection that has been silent for two thirds of the session timeout (the client pings after a third of
 * it when idle, so a live server always answers in time); the client then reconnects, to another server of
 * the ensemble if it has one, and we report SUSPENDED meanwhile. Only for clients we create: we do not patch
 * an application's client.
 */
export function dropSilentConnections(client: Client): () => void {
  const manager = internalsOf(client);
  if (!manager) return () => undefined;
  let lastHeard = performance.now();
  const heard = () => (lastHeard = performance.now());
  const onSocketData = manager.onSocketData;
  manager.onSocketData = function (this: ConnectionManagerInternals, buffer: Buffer) {
    heard();
    return onSocketData.call(this, buffer);
  };
  // Each new connection attempt starts the clock again.
  manager.on('state', heard);
  const check = () => {
    const waitingForServer = manager.state === CONNECTION_CONNECTING || manager.state === CONNECTION_CONNECTED;
    if (waitingForServer && performance.now() - lastHeard > (client.getSessionTimeout() * 2) / 3) {
      heard();
      manager.socket?.destroy();
    }
  };
  const timer = setInterval(check, Math.max(50, Math.floor(client.getSessionTimeout() / 10)));
  timer.unref();
  return () => {
    clearInterval(timer);
    manager.removeListener('state', heard);
  };
}

/**
 * node-zookeeper-client sometimes misreads a reply and throws from its socket handler ("Unknown code:
 * -615055360"; its issues #23 and #70), which would crash the process. Treat that as a lost connection
 * instead: pending requests fail with CONNECTION_LOSS and the client reconnects. Call before connect().
 */
export function containSocketHandlerErrors(client: Client): void {
  const manager = internalsOf(client);
  if (!manager) return;
  const onSocketData = manager.onSocketData;
  manager.onSocketData = function (this: ConnectionManagerInternals, buffer: Buffer) {
    try {
      return onSocketData.call(this, buffer);
    } catch {
      this.socket?.destroy();
    }
  };
}

/**
 * Closes a client we created. Connected: closeSession (the server deletes our ephemeral nodes at once), then
 * wait for the socket to go. Not connected: there is no session to close politely, and node-zookeeper-client
 * would misread a connect reply that arrives after close() (it throws from its socket handler), so stop it
 * from connecting at all and drop the socket. Waits are ref'd: the caller awaits them.
 */
export async function closeOwnedClient(client: Client): Promise<void> {
  const manager = internalsOf(client);
  if (!manager) return client.close();
  // A function, so TypeScript does not keep the state it saw before the awaits.
  const state = (): number => manager.state;
  if (state() === CONNECTION_CONNECTED) {
    client.close();
    const deadline = Date.now() + CLOSE_GRACE_MS;
    while (state() !== CONNECTION_CLOSED && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    if (state() === CONNECTION_CLOSED) return;
  }
  manager.setState(CONNECTION_CLOSING);
  if (manager.connectTimeoutHandler) clearTimeout(manager.connectTimeoutHandler);
  // A reconnection round already scheduled still opens a socket: close it as soon as it connects, and stop its
  // connect timer too (the client's own handler, which we replace, is what clears it; left, it holds the process).
  manager.onSocketConnected = function (this: ConnectionManagerInternals) {
    if (this.connectTimeoutHandler) clearTimeout(this.connectTimeoutHandler);
    this.socket?.destroy();
  };
  manager.socket?.destroy();
}
