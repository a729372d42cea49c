import { Holders } from '../../lib/backends/memory/holders';

/** The memory backend's per-key holder table: one holder in fields, a Map from the second on. */
describe('memory backend holders', () => {
  it('keeps one holder, replaces it under the same token, and forgets it', () => {
    const holders = new Holders<string>();
    expect(holders.size).toBe(0);
    holders.set('a', 'first');
    holders.set('a', 'again');
    expect(holders.size).toBe(1);
    expect(holders.get('a')).toBe('again');
    expect(holders.has('b')).toBe(false);
    expect(holders.delete('b')).toBe(false);
    expect(holders.delete('a')).toBe(true);
    expect(holders.size).toBe(0);
    expect(holders.get('a')).toBeUndefined();
    expect([...holders.values()]).toEqual([]);
  });

  it('keeps every holder once a second one arrives (readers, permits), in arrival order', () => {
    const holders = new Holders<number>();
    holders.set('a', 1);
    holders.set('b', 2);
    holders.set('c', 3);
    expect(holders.size).toBe(3);
    expect([...holders.entries()]).toEqual([
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ]);
    expect(holders.delete('a')).toBe(true);
    expect(holders.has('a')).toBe(false);
    expect([...holders.values()]).toEqual([2, 3]);
  });

  it('lets the caller delete the holder it is looking at while iterating (expiry sweeps do)', () => {
    for (const count of [1, 3]) {
      const holders = new Holders<number>();
      for (let index = 0; index < count; index++) holders.set(`t${index}`, index);
      for (const [token] of holders.entries()) holders.delete(token);
      expect(holders.size).toBe(0);
    }
  });
});
