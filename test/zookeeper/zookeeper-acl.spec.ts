import { ACL, type Client, createClient, Id, Permission } from 'node-zookeeper-client';
import type { ZooKeeperAcl } from '../../lib/backends/zookeeper/zookeeper-client';
import { LockBackendError } from '../../lib/errors/lock-backend.error';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper-lock.backend';
import { containSocketHandlerErrors } from '../../lib/backends/zookeeper/owned-client';
import { lockPath } from '../../lib/backends/zookeeper/zookeeper-node-layout';
import { LockService } from '../../lib/lock.service';
import { startZooKeeper, type TestZooKeeperServer } from '../support/zookeeper-server';

/**
 * Nodes are created with node-zookeeper-client's default ACL (open to all, as Curator's default) unless the backend
 * gets `acl`: then lock paths, contender nodes and election nodes carry it, so an ACL keeps other clients out of
 * every lock, not only of the first creation of the root.
 */
const NAMESPACE = 'secured';
const CREDENTIALS = { scheme: 'digest', auth: 'locker:s3cret' };
/** All permissions for the identities the creating session authenticated as (ZooKeeper's CREATOR_ALL_ACL). */
const CREATOR_ALL: ZooKeeperAcl[] = [{ permission: Permission.ALL, id: { scheme: 'auth', id: '' } }];

describe('ZooKeeper ACLs on the nodes the backend creates', () => {
  let server: TestZooKeeperServer;
  const services: LockService[] = [];
  const clients: Client[] = [];

  beforeAll(async () => {
    server = await startZooKeeper();
  }, 60_000);

  afterAll(async () => {
    for (const service of services) await service.close();
    for (const client of clients) client.close();
    await server?.stop();
  });

  function service(backend: ZooKeeperLockBackend): LockService {
    const locks = new LockService(backend, { keyPrefix: NAMESPACE, operationTimeout: 3_000 });
    services.push(locks);
    return locks;
  }

  /** A raw client, with credentials or without. */
  async function rawClient(auth?: { scheme: string; auth: string }): Promise<Client> {
    const client = createClient(server.connectionString, { sessionTimeout: 10_000, spinDelay: 100 });
    containSocketHandlerErrors(client);
    if (auth) client.addAuthInfo(auth.scheme, Buffer.from(auth.auth));
    clients.push(client);
    await new Promise<void>((resolve) => {
      client.once('connected', () => resolve());
      client.connect();
    });
    return client;
  }

  /** A raw request as a promise; node-zookeeper-client's Exception is an Error at runtime (its @types omit that). */
  function call<T>(run: (done: (error: unknown, value?: T) => void) => void): Promise<T> {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an Exception, see above
    return new Promise((resolve, reject) => run((error, value) => (error ? reject(error) : resolve(value!))));
  }

  it('puts the ACL on the lock path and the contender node, keeps clients without the credentials out, and lets the owner work', async () => {
    const trusted = service(
      new ZooKeeperLockBackend({
        connectionString: server.connectionString,
        authInfo: [CREDENTIALS],
        acl: CREATOR_ALL,
      }),
    );
    const lock = await trusted.acquire('invoice:7');
    const path = lockPath(NAMESPACE, 'invoice:7');

    const insider = await rawClient(CREDENTIALS);
    const [node] = await call<string[]>((done) => insider.getChildren(path, done));
    for (const target of [path, `${path}/${node}`]) {
      // @types/node-zookeeper-client misnames the field; the objects are ZooKeeperAcl-shaped.
      const acls = (await call<ACL[]>((done) =>
        insider.getACL(target, (error, found) => done(error, found)),
      )) as unknown as ZooKeeperAcl[];
      expect(acls.map((acl) => [acl.permission, acl.id.scheme])).toEqual([[Permission.ALL, 'digest']]);
    }

    const outsider = await rawClient();
    await expect(call<string[]>((done) => outsider.getChildren(path, done))).rejects.toThrow(/NO_AUTH/);
    await expect(call<void>((done) => outsider.remove(`${path}/${node}`, -1, done))).rejects.toThrow(/NO_AUTH/);

    const intruder = service(new ZooKeeperLockBackend({ connectionString: server.connectionString }));
    const refused = await intruder.tryAcquire('invoice:7').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LockBackendError);
    expect((refused as Error).message).toMatch(/NO_AUTH/);

    // The holder kept its lock all along, and releases it.
    expect(lock.signal.aborted).toBe(false);
    await lock.release();

    // Another instance with the same credentials, on a client the app passed in, takes it next.
    const app = await rawClient(CREDENTIALS);
    const colleague = service(new ZooKeeperLockBackend({ client: app, acl: CREATOR_ALL }));
    const next = await colleague.acquire('invoice:7');
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    await next.release();
  });

  it("takes node-zookeeper-client's own ACL objects too", async () => {
    const locks = service(
      new ZooKeeperLockBackend({
        connectionString: server.connectionString,
        authInfo: [CREDENTIALS],
        acl: [new ACL(Permission.ALL, new Id('auth', '')) as unknown as ZooKeeperAcl],
      }),
    );
    const lock = await locks.acquire('plain');
    const outsider = await rawClient();
    await expect(call<string[]>((done) => outsider.getChildren(lockPath(NAMESPACE, 'plain'), done))).rejects.toThrow(
      /NO_AUTH/,
    );
    await lock.release();
  });

  it("says what is missing when an 'auth' acl comes without credentials", async () => {
    const locks = service(new ZooKeeperLockBackend({ connectionString: server.connectionString, acl: CREATOR_ALL }));
    const error = await locks.tryAcquire('no-credentials').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LockBackendError);
    expect((error as Error).message).toMatch(/INVALID_ACL.*give the backend authInfo/);
    expect((error as Error).message).toMatch(/check the user, its password and its permissions/);
  });

  it('refuses a malformed acl or authInfo with a TypeError that shows the expected shape', () => {
    const connectionString = server.connectionString;
    expect(() => new ZooKeeperLockBackend({ connectionString, acl: [] })).toThrow(/acl must be a non-empty array/);
    expect(
      () =>
        new ZooKeeperLockBackend({
          connectionString,
          acl: [...CREATOR_ALL, {} as never],
        }),
    ).toThrow(/ACL\.CREATOR_ALL_ACL/);
    expect(() => new ZooKeeperLockBackend({ connectionString, authInfo: [{ scheme: 'digest' } as never] })).toThrow(
      /authInfo must be an array of \{ scheme, auth \}/,
    );
  });
});
