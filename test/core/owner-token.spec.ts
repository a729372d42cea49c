import { LockService, MemoryLockBackend } from '../../lib';
import { newOwnerToken } from '../../lib/utils/owner-token';

const V4_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('owner tokens', () => {
  it('are lowercase v4 UUIDs, as the ZooKeeper backend and Curator require', () => {
    for (let i = 0; i < 1_000; i++) expect(newOwnerToken()).toMatch(V4_UUID);
  });

  it('never repeat, across many refills of the random batch', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) seen.add(newOwnerToken());
    expect(seen.size).toBe(20_000);
  });

  it('use every hex digit in the random positions (the bits come from the CSPRNG, not a counter)', () => {
    const digitsAt = Array.from({ length: 36 }, () => new Set<string>());
    for (let i = 0; i < 2_000; i++) [...newOwnerToken()].forEach((char, at) => digitsAt[at].add(char));
    const fixed = new Set([8, 13, 14, 18, 19, 23]);
    digitsAt.forEach((digits, at) => {
      if (!fixed.has(at)) expect(digits.size).toBe(16);
    });
    // The variant nibble takes exactly 8, 9, a and b.
    expect([...digitsAt[19]].sort()).toEqual(['8', '9', 'a', 'b']);
  });

  it('are what LockService hands each grant', async () => {
    const locks = new LockService(new MemoryLockBackend(), { keyPrefix: 'tokens' });
    const first = await locks.acquire('file:1');
    const second = await locks.acquire('file:2');
    expect(first.token).toMatch(V4_UUID);
    expect(second.token).toMatch(V4_UUID);
    expect(first.token).not.toBe(second.token);
    await locks.close();
  });
});
