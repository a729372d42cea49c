import type { ContractContext } from '../contract-context';

/** Keys that are prefixes of one another, contain separators, braces or the escape character. */
const NEIGHBOUR_KEYS = [
  'user/1',
  'user',
  'user1',
  'user/',
  'user:1',
  '{a}',
  'a',
  '{a',
  'a}',
  '%7Ba%7D',
  '*',
  'a*',
  '?',
];

export function isolationCases(ctx: ContractContext): void {
  it('the same key under two keyPrefixes is two locks', async () => {
    const left = ctx.service({ keyPrefix: `${ctx.ns}-left` });
    const right = ctx.service({ keyPrefix: `${ctx.ns}-right` });
    const a = await left.tryAcquire('shared', { ttl: 10_000 });
    const b = await right.tryAcquire('shared', { ttl: 10_000 });
    expect(a).not.toBeNull();
    expect(b).not.toBeNull();
    await a!.release();
    expect(await right.isLocked('shared')).toBe(true);
    await b!.release();
  });

  // keyPrefix allows [A-Za-z0-9_.:-] (no "/"), so these are the separators a naive "<prefix><sep><key>" join could confuse.
  it('prefix/key boundaries do not collide: ("ns", "a:b") vs ("ns:a", "b"), ("ns", "a.b") vs ("ns.a", "b"), ("ns", "a/b")', async () => {
    const pairs: [string, string][] = [
      [ctx.ns, 'a:b'],
      [`${ctx.ns}:a`, 'b'],
      [ctx.ns, 'a.b'],
      [`${ctx.ns}.a`, 'b'],
      [ctx.ns, 'a/b'],
      [`${ctx.ns}-a`, 'b'],
    ];
    const held = [];
    for (const [keyPrefix, key] of pairs) {
      const lock = await ctx.service({ keyPrefix }).tryAcquire(key, { ttl: 10_000 });
      expect({ keyPrefix, key, granted: lock !== null }).toEqual({ keyPrefix, key, granted: true });
      held.push(lock!);
    }
    for (const lock of held) await lock.release();
  });

  it(`keys that are prefixes of each other or contain braces/wildcards are distinct locks: ${NEIGHBOUR_KEYS.join(' ')}`, async () => {
    const owner = ctx.service();
    const other = ctx.service();
    const held = new Map<string, Awaited<ReturnType<typeof owner.acquire>>>();
    for (const key of NEIGHBOUR_KEYS) {
      const lock = await owner.tryAcquire(key, { ttl: 10_000 });
      expect({ key, granted: lock !== null }).toEqual({ key, granted: true });
      held.set(key, lock!);
    }
    for (const key of NEIGHBOUR_KEYS) {
      expect({ key, locked: await other.isLocked(key) }).toEqual({ key, locked: true });
      expect({ key, stolen: (await other.tryAcquire(key, { ttl: 10_000 })) !== null }).toEqual({ key, stolen: false });
    }
    // Releasing one frees exactly that one.
    await held.get('user')!.release();
    await held.get('{a}')!.release();
    for (const key of NEIGHBOUR_KEYS) {
      const expected = key !== 'user' && key !== '{a}';
      expect({ key, locked: await other.isLocked(key) }).toEqual({ key, locked: expected });
    }
    for (const lock of held.values()) await lock.release();
  });
}
