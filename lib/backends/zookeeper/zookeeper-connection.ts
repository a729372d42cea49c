import type { Client, State } from 'node-zookeeper-client';
import { LockBackendError } from '../../errors';
import { monotonicNow } from '../../utils/clock';
import { loadOptionalPackage } from '../../utils/optional-package';
import { closeOwnedClient, containSocketHandlerErrors, dropSilentConnections, isClientClosed } from './owned-client';
import { PendingCalls } from './pending-calls';
import { describeConnectionString, readConnectionString, sessionIdOf, STATE } from './zookeeper-client-facts';
import { ZK_ERROR } from './zookeeper-errors';
import type { ZooKeeperAcl, ZooKeeperAuthInfo } from './zookeeper-client';

/**
 * What happened to the session our lock nodes live on, in Curator's terms:
 *  - suspended: the connection dropped; the session (and our nodes) survive if we reconnect in time;
 *  - reconnected: the same session is back, nothing was lost;
 *  - expired: the server ended the session and deleted its ephemeral nodes (Curator's LOST);
 *  - connected: a new session is up (the first one, or, for a client we own, the one after an expiry).
 */
export type SessionEvent =
  | { readonly type: 'suspended' }
  | { readonly type: 'reconnected'; readonly sessionId: string }
  | { readonly type: 'expired'; readonly sessionId: string }
  | { readonly type: 'connected'; readonly sessionId: string };

export type SessionSource =
  | { readonly client: Client; readonly acl?: readonly ZooKeeperAcl[] }
  | {
      readonly connectionString: string;
      readonly sessionTimeout: number;
      readonly spinDelay?: number;
      readonly authInfo?: readonly ZooKeeperAuthInfo[];
      readonly acl?: readonly ZooKeeperAcl[];
    };

type ZooKeeperModule = typeof import('node-zookeeper-client');

/**
 * The ZooKeeper client the backend works through, and the session's life (ZooKeeperSession adds the requests).
 *
 * node-zookeeper-client queues requests while disconnected and never fails them if the session then
 * expires, so every call made through here is rejected when its client's session expires or we close.
 * An expired client never reconnects; when the client is ours we replace it with a new one (a new session),
 * as Curator does. An application's own client stays expired: the app has to create a new one.
 */
export abstract class ZooKeeperConnection {
  readonly address: string;
  private client: Client;
  private readonly ownsClient: boolean;
  private readonly makeClient?: () => Client;
  /** The session our nodes belong to; undefined before the first connect and after an expiry. */
  private liveSessionId: string | undefined;
  private connected = false;
  /** Since when (monotonic ms) we have had no connection, and whether this client ever had one. */
  private notConnectedSince = monotonicNow();
  private everConnected = false;
  private terminal: Error | undefined;
  private closing: Promise<void> | undefined;
  private readonly listeners = new Set<(event: SessionEvent) => void>();
  private readonly pending = new PendingCalls();
  private readonly onClientState = new Map<Client, (state: State) => void>();
  private stopSilenceWatch: (() => void) | undefined;
  /** node-zookeeper-client ACL instances for every create, or undefined for its default (open to all). */
  protected readonly acls: unknown[] | undefined;
  /** Our own client carries credentials: requests wait for a connection (see call()). */
  private authenticates = false;
  /** Our own client, not connected yet: the first request connects it. */
  private connectFirst = false;
  private readonly connectedWaiters: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];

  constructor(source: SessionSource) {
    this.acls = source.acl && zooKeeperAcls(source.acl);
    if ('client' in source) {
      this.client = source.client;
      this.ownsClient = false;
      this.address = describeConnectionString(readConnectionString(source.client));
      this.attach(this.client);
      // The app may hand us a client that is already connected.
      if (this.client.getState?.()?.code === STATE.SYNC_CONNECTED) {
        this.connected = true;
        this.everConnected = true;
        this.liveSessionId = sessionIdOf(this.client);
      }
    } else {
      const zookeeper = loadOptionalPackage<ZooKeeperModule>('node-zookeeper-client', 'The ZooKeeper backend');
      const { connectionString, sessionTimeout, spinDelay, authInfo = [] } = source;
      this.authenticates = authInfo.length > 0;
      this.address = describeConnectionString(connectionString);
      this.makeClient = () => {
        // retries: 0, because a blind retry of a create could leave a second contender node behind.
        const client = zookeeper.createClient(connectionString, { sessionTimeout, spinDelay, retries: 0 });
        for (const { scheme, auth } of authInfo) client.addAuthInfo(scheme, Buffer.from(auth));
        return client;
      };
      this.ownsClient = true;
      this.client = this.makeClient();
      this.attach(this.client);
      containSocketHandlerErrors(this.client);
      this.stopSilenceWatch = dropSilentConnections(this.client);
      // Connected at the first request (call()): a backend never used opens nothing that keeps the process alive.
      this.connectFirst = true;
    }
  }

  /** Connects a client we created, if nothing has yet (requests do this themselves). Idempotent. */
  startConnecting(): void {
    if (!this.connectFirst) return;
    this.connectFirst = false;
    this.notConnectedSince = monotonicNow();
    this.client.connect();
  }

  /** The live session's id (16 hex digits), or undefined when there is none right now. */
  get sessionId(): string | undefined {
    return this.liveSessionId;
  }

  /** The session timeout the server negotiated (the requested one before the first connect), ms. */
  get sessionTimeout(): number {
    return this.client.getSessionTimeout();
  }

  get isConnected(): boolean {
    return this.connected;
  }

  /**
   * True when connected now, or when the first connection of this client comes up within `ms`; false at once
   * for a connection that was lost (it may be gone for long), or when the first one takes longer.
   */
  firstConnectWithin(ms: number): Promise<boolean> {
    if (this.connected) return Promise.resolve(true);
    if (this.everConnected || this.terminal || this.closing || ms <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (connected: boolean) => {
        clearTimeout(timer);
        stop();
        resolve(connected);
      };
      const timer = setTimeout(() => done(false), ms);
      timer.unref();
      const stop = this.onEvent((event) => {
        if (event.type === 'connected') done(true);
      });
    });
  }

  /** Why requests may go unanswered now (LockBackend.describeConnection); undefined while connected. */
  describeConnection(): string | undefined {
    if (this.connected) return undefined;
    const forMs = Math.round(monotonicNow() - this.notConnectedSince);
    return this.everConnected
      ? `not connected to ZooKeeper for ${forMs} ms: the connection was lost and has not come back`
      : `not connected to ZooKeeper: no server of the connection string has accepted a session in ${forMs} ms`;
  }

  /** Subscribes to session events; returns the unsubscribe function. */
  onEvent(listener: (event: SessionEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Fails every outstanding call, stops listening, and closes the client if we created it. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.terminal = this.error('close', 'the backend is closed (close() was called)');
    this.pending.failAll(this.terminal);
    this.settleConnectedWaiters(this.terminal);
    for (const client of [...this.onClientState.keys()]) this.detach(client);
    this.listeners.clear();
    this.stopSilenceWatch?.();
    if (this.ownsClient) await closeOwnedClient(this.client);
  }

  /** The application closed the client it passed in: no request will be answered again. */
  get clientClosedByApp(): boolean {
    return !this.ownsClient && !this.closing && isClientClosed(this.client);
  }

  /** Runs one request on the current client, unless we are closed or the session is over for good. */
  protected call<T>(run: (client: Client, done: (error: unknown, value?: T) => void) => void): Promise<T> {
    if (this.terminal) return Promise.reject(this.terminal);
    this.startConnecting();
    // node-zookeeper-client sends the requests queued while it connects before its credentials, so the server
    // would take them as anonymous (INVALID_ACL, NO_AUTH): with credentials, they wait for the connection.
    if (this.authenticates && !this.connected) return this.whenConnected().then(() => this.call(run));
    return this.pending.run(this.client, run);
  }

  private whenConnected(): Promise<void> {
    return new Promise((resolve, reject) => this.connectedWaiters.push({ resolve, reject }));
  }

  private settleConnectedWaiters(error?: unknown): void {
    for (const waiter of this.connectedWaiters.splice(0)) {
      if (error === undefined) waiter.resolve();
      else waiter.reject(error);
    }
  }

  private attach(client: Client): void {
    const listener = (state: State) => this.onState(client, state);
    this.onClientState.set(client, listener);
    client.on('state', listener);
  }

  private detach(client: Client): void {
    const listener = this.onClientState.get(client);
    if (listener) client.removeListener('state', listener);
    this.onClientState.delete(client);
  }

  private onState(client: Client, state: State): void {
    if (client !== this.client || this.closing) return;
    switch (state.code) {
      case STATE.SYNC_CONNECTED: {
        const sessionId = sessionIdOf(client);
        this.connected = true;
        this.everConnected = true;
        this.settleConnectedWaiters();
        if (sessionId === this.liveSessionId) return this.emit({ type: 'reconnected', sessionId });
        if (this.liveSessionId) this.emit({ type: 'expired', sessionId: this.liveSessionId });
        this.liveSessionId = sessionId;
        return this.emit({ type: 'connected', sessionId });
      }
      case STATE.DISCONNECTED:
        if (!this.connected) return;
        this.connected = false;
        this.notConnectedSince = monotonicNow();
        return this.emit({ type: 'suspended' });
      case STATE.EXPIRED:
        return this.onExpired(client);
      case STATE.AUTH_FAILED:
        this.connected = false;
        this.terminal = this.error('connect', "ZooKeeper rejected the client's credentials (AUTH_FAILED)");
        return this.pending.fail(client, this.terminal);
    }
  }

  private onExpired(client: Client): void {
    const expired = this.liveSessionId;
    this.liveSessionId = undefined;
    if (this.connected) this.notConnectedSince = monotonicNow();
    this.connected = false;
    const error = Object.assign(new Error('Exception: SESSION_EXPIRED[-112]'), { code: ZK_ERROR.SESSION_EXPIRED });
    this.pending.fail(client, error);
    if (this.ownsClient) {
      // Like Curator: a new ZooKeeper handle, hence a new session. The old client has closed its socket.
      this.detach(client);
      this.pending.forget(client);
      this.stopSilenceWatch?.();
      this.client = this.makeClient!();
      this.attach(this.client);
      containSocketHandlerErrors(this.client);
      this.stopSilenceWatch = dropSilentConnections(this.client);
      this.client.connect();
    } else {
      this.terminal = this.error(
        'session',
        'the ZooKeeper session of the client passed to ZooKeeperLockBackend expired, and node-zookeeper-client ' +
          'never reconnects an expired client: create a new client and a new backend (or pass { connectionString } ' +
          'so the backend replaces its client itself)',
      );
    }
    if (expired) this.emit({ type: 'expired', sessionId: expired });
  }

  private emit(event: SessionEvent): void {
    for (const listener of [...this.listeners]) listener(event);
  }

  private error(operation: string, detail: string): LockBackendError {
    return new LockBackendError('zookeeper', this.address, operation, detail);
  }
}

/** The entries as node-zookeeper-client's own ACL objects (create() serialises them with their methods). */
function zooKeeperAcls(acl: readonly ZooKeeperAcl[]): unknown[] {
  const { ACL, Id } = loadOptionalPackage<ZooKeeperModule>('node-zookeeper-client', 'The ZooKeeper backend');
  return acl.map((entry) => new ACL(entry.permission, new Id(entry.id.scheme, entry.id.id)));
}
