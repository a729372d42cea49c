import {
  contenderKey,
  encodeLockKey,
  lockPrefix,
  prefixRangeEnd,
  readerKey,
  READER_MARK,
  semaphorePrefix,
} from '../../lib/backends/etcd/etcd-key-layout';

describe('etcd key layout', () => {
  it('keeps ordinary keys readable, as etcdctl users type them', () => {
    expect(lockPrefix('locks', 'file:42')).toBe('locks/file:42/');
    expect(lockPrefix('app/locks', 'user-7.report_1')).toBe('app/locks/user-7.report_1/');
  });

  it('encodes "%", "/" and control characters, so the encoding is reversible and has no "/"', () => {
    expect(encodeLockKey('user/1')).toBe('user%2F1');
    expect(encodeLockKey('100%')).toBe('100%25');
    expect(encodeLockKey('a%2Fb')).toBe('a%252Fb');
    expect(encodeLockKey('tab\there\n\u0000\u007f')).toBe('tab%09here%0A%00%7F');
    expect(encodeLockKey('ключ ✓ {x}')).toBe('ключ ✓ {x}');
    expect(decodeURIComponent(encodeLockKey('a/b%c'))).toBe('a/b%c');
  });

  it('never lets one lock range contain another lock’s keys (user, user/1, user1)', () => {
    const names = ['user', 'user/1', 'user1', 'user/', '/user', 'user%2F1', 'u', ''].filter(Boolean);
    for (const a of names) {
      for (const b of names) {
        if (a === b) continue;
        const contender = contenderKey(lockPrefix('locks', b), '7587883443495380101');
        expect(contender.startsWith(lockPrefix('locks', a))).toBe(false);
      }
    }
  });

  it('names a contender by its lease id in lowercase hex, like Go’s %x', () => {
    // The lease from the seed article's Go log: /etcdlock/3f357a41d952f22c.
    expect(contenderKey('locks/file:1/', '4554681021392679468')).toBe('locks/file:1/3f357a41d952f22c');
    expect(contenderKey('p/', '255')).toBe('p/ff');
  });

  it('names a reader r-<lease hex> in the lock’s range, a prefix no lease id in hex can start with', () => {
    expect(readerKey('locks/file:1/', '255')).toBe('locks/file:1/r-ff');
    expect(readerKey('locks/file:1/', '1').startsWith(lockPrefix('locks', 'file:1'))).toBe(true);
    expect(/^[0-9a-f]+$/.test(READER_MARK)).toBe(false);
  });

  it('keeps every semaphore range apart from every lock range, whatever the names', () => {
    const names = ['jobs', '%semaphore', '%semaphore/jobs', '%25semaphore', 'semaphore', '%', 'jobs/', '/jobs'];
    for (const a of names) {
      expect(semaphorePrefix('locks', a)).toBe(`locks/%semaphore/${encodeLockKey(a)}/`);
      for (const b of names) {
        const permit = contenderKey(semaphorePrefix('locks', b), '7587883443495380101');
        const lock = contenderKey(lockPrefix('locks', b), '7587883443495380101');
        expect(permit.startsWith(lockPrefix('locks', a))).toBe(false);
        expect(lock.startsWith(semaphorePrefix('locks', a))).toBe(false);
        if (a !== b) expect(permit.startsWith(semaphorePrefix('locks', a))).toBe(false);
      }
    }
  });

  it('ends a prefix range at the prefix with its last byte incremented', () => {
    expect(prefixRangeEnd(Buffer.from('locks/a/')).toString()).toBe('locks/a0');
    expect([...prefixRangeEnd(Buffer.from([0x61, 0xff]))]).toEqual([0x62]);
    expect([...prefixRangeEnd(Buffer.from([0xff]))]).toEqual([0]);
  });
});
