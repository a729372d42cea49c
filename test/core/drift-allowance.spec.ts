import { validUntil as etcdValidUntil } from '../../lib/backends/etcd/etcd-lock-state';
import { validityEnd as redisValidityEnd } from '../../lib/backends/redis/validity';
import { validUntil as zooKeeperValidUntil } from '../../lib/backends/zookeeper/zookeeper-lock-state';
import { driftAllowance } from '../../lib/utils/drift-allowance';

describe('the clock-drift allowance every backend takes off a grant', () => {
  it('is 1 % of the ttl plus 2 ms, capped at half the ttl', () => {
    expect(driftAllowance(30_000)).toBe(302);
    expect(driftAllowance(100)).toBe(3);
    expect(driftAllowance(2)).toBe(1);
    expect(driftAllowance(1)).toBe(0.5);
  });

  // A valid ttl of 1 or 2 ms left etcd and ZooKeeper grants with no validity at all: a free key then read as busy.
  it.each([1, 2, 3, 10])('leaves a %s ms grant some validity on every backend', (ttl) => {
    const startedAt = 1_000;
    for (const end of [
      redisValidityEnd(startedAt, ttl),
      etcdValidUntil(startedAt, ttl, 60),
      zooKeeperValidUntil(startedAt, ttl, 10_000),
    ]) {
      expect(end).toBeGreaterThan(startedAt);
      expect(end).toBeLessThanOrEqual(startedAt + ttl);
    }
  });
});
