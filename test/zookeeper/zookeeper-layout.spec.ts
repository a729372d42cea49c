import fc from 'fast-check';
import { localAddressData } from '../../lib/backends/zookeeper/local-address';
import {
  ALL_MARKERS,
  contenderPrefix,
  encodePathSegment,
  excludesReaders,
  lockPath,
  MUTEX_MARKER,
  READ_MARKER,
  sortContenders,
  sortKey,
  WRITE_MARKER,
} from '../../lib/backends/zookeeper/zookeeper-node-layout';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper-lock.backend';
import { validateLockKey } from '../../lib/utils/validate';
import { startZooKeeper, TestZooKeeperServer } from '../support/zookeeper-server';
import { AdminClient, held, lockRequest, stateOf } from './zookeeper-spec-helpers';

describe('ZooKeeper node layout (pure)', () => {
  it('percent-encodes only what ZooKeeper rejects or misreads, and the escape character', () => {
    expect(encodePathSegment('file:42')).toBe('file:42');
    expect(encodePathSegment('{a} b*?[]')).toBe('{a} b*?[]');
    expect(encodePathSegment('café €')).toBe('café €');
    expect(encodePathSegment('a/b')).toBe('a%2Fb');
    expect(encodePathSegment('100%')).toBe('100%25');
    expect(encodePathSegment('%2F')).toBe('%252F');
    expect(encodePathSegment('.')).toBe('%2E');
    expect(encodePathSegment('..')).toBe('%2E%2E');
    expect(encodePathSegment('...')).toBe('...');
    expect(encodePathSegment('a\u0000b\u001fc\u007f\u0085')).toBe('a%00b%1Fc%7F%C2%85');
    // Outside the BMP (UTF-16 surrogates in Java) and the private-use area: rejected by ZooKeeper.
    expect(encodePathSegment('lock🔒')).toBe('lock%F0%9F%94%92');
    expect(encodePathSegment('\ue000\ufff0')).toBe('%EE%80%80%EF%BF%B0');
  });

  it('is one-to-one: decoding gives the key back, for any key the core accepts', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }), (raw) => {
        fc.pre(raw.isWellFormed());
        const key = validateLockKey(raw);
        const encoded = encodePathSegment(key);
        expect(encoded).not.toContain('/');
        expect(decodeURIComponent(encoded)).toBe(key);
      }),
      { numRuns: 2_000 },
    );
  });

  it('sorts like Curator: by the text after the last marker, foreign names by their whole name', () => {
    const token = '0f8fad5b-d9cb-469f-a165-70867728950e';
    const names = [
      `_c_${token}-lock-0000000012`,
      'not-a-contender',
      `_c_${token}-lock-0000000003`,
      'x-lock-0000000007',
    ];
    expect(sortKey(names[0], [MUTEX_MARKER])).toBe('0000000012');
    expect(sortKey('not-a-contender', [MUTEX_MARKER])).toBe('not-a-contender');
    expect(sortContenders(names)).toEqual([names[2], names[3], names[0], 'not-a-contender']);
    // Read/write markers (InterProcessReadWriteLock) share the parent's one sequence counter.
    const rw = [`_c_${token}-${WRITE_MARKER}0000000009`, `_c_${token}-${READ_MARKER}0000000004`];
    expect(sortContenders(rw, [READ_MARKER, WRITE_MARKER])).toEqual([rw[1], rw[0]]);
  });

  it('names each mode after its Curator recipe, orders mixed modes by sequence, and counts exclusive nodes as writers', () => {
    const token = '0f8fad5b-d9cb-469f-a165-70867728950e';
    expect(contenderPrefix(token)).toBe(`_c_${token}-lock-`);
    expect(contenderPrefix(token, 'read')).toBe(`_c_${token}-__READ__`);
    expect(contenderPrefix(token, 'write')).toBe(`_c_${token}-__WRIT__`);
    const mixed = [
      `${contenderPrefix(token, 'read')}0000000008`,
      `${contenderPrefix(token)}0000000005`,
      `${contenderPrefix(token, 'write')}0000000006`,
    ];
    expect(sortContenders(mixed, ALL_MARKERS)).toEqual([mixed[1], mixed[2], mixed[0]]);
    expect(mixed.map(excludesReaders)).toEqual([false, true, true]);
    expect(excludesReaders('not-a-contender')).toBe(false);
  });

  it('refuses owner tokens that are not lowercase UUIDs, which Curator would not recognise as protected names', async () => {
    const backend = new ZooKeeperLockBackend({ connectionString: '127.0.0.1:1', sessionTimeout: 2_000 });
    try {
      await expect(backend.tryAcquire({ namespace: 'ns', key: 'k', token: 'a/b', ttl: 1_000 })).rejects.toThrow(
        TypeError,
      );
    } finally {
      await backend.close();
    }
  });
});

describe('ZooKeeper node layout (on the server)', () => {
  let server: TestZooKeeperServer;
  let admin: AdminClient;
  let backend: ZooKeeperLockBackend;

  beforeAll(async () => {
    server = await startZooKeeper();
    admin = await AdminClient.connect(server.connectionString);
    backend = new ZooKeeperLockBackend({ connectionString: server.connectionString, sessionTimeout: 10_000 });
  });

  afterAll(async () => {
    await backend?.close();
    admin?.close();
    await server?.stop();
  });

  it('creates Curator InterProcessMutex nodes: /<ns>/<key>/_c_<token>-lock-<10 digits>, ephemeral, with the host address as data', async () => {
    const request = lockRequest('file:42', 5_000, 'orders');
    const grant = (await backend.tryAcquire(request))!;
    const { nodePath, sessionId } = stateOf(grant);
    expect(nodePath).toMatch(new RegExp(`^/orders/file:42/_c_${request.token}-lock-\\d{10}$`));
    expect(lockPath('orders', 'file:42')).toBe('/orders/file:42');

    const stat = (await admin.stat(nodePath))!;
    expect(stat.ephemeralOwner.toString('hex')).toBe(sessionId);
    expect(stat.czxid.readBigUInt64BE(0)).toBe(grant.fencingToken);
    expect(await admin.data(nodePath)).toEqual(localAddressData());
    // Parents are persistent (no ephemeral owner), like Curator's creatingParents.
    for (const parent of ['/orders', '/orders/file:42']) {
      expect((await admin.stat(parent))!.ephemeralOwner.readBigUInt64BE(0)).toBe(0n);
    }
    await backend.release(held(request, grant));
  });

  it('every key the core accepts maps to a path the server accepts, and distinct keys to distinct locks', async () => {
    const keys = fc
      .sample(fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }), { numRuns: 150, seed: 42 })
      .filter((raw) => raw.isWellFormed())
      .map((raw) => validateLockKey(raw));
    const special = [
      '.',
      '..',
      '/',
      '%',
      '%2F',
      'a/b',
      'lock-',
      '_c_',
      '\u0000',
      '🔒',
      '\ue000',
      '\uffff',
      'zookeeper',
    ];
    const distinct = [...new Set([...keys, ...special])];
    const grants = [];
    for (const key of distinct) {
      const request = lockRequest(key, 5_000, 'encoded');
      const grant = await backend.tryAcquire(request);
      expect({ key, granted: grant !== null }).toEqual({ key, granted: true });
      grants.push(held(request, grant!));
    }
    // One lock path per key: none shared, none nested.
    expect((await admin.children('/encoded')).length).toBe(distinct.length);
    for (const lock of grants) expect(await backend.release(lock)).toBe(true);
  });
});
