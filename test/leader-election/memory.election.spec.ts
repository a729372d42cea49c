import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { electionContract, instanceOn, renewals, uniqueName } from './election-contract';

electionContract('memory', async () => {
  const backend = new MemoryLockBackend();
  return {
    // Renewals every 500 ms outlast the event-loop stalls of a busy 2-core CI machine; 300 ms did not.
    ttl: 1_500,
    proclaims: true,
    // Every instance shares the one in-process backend, as LockServices of one process would.
    instance: async () => instanceOn(backend, 1_500),
    close: () => backend.close(),
  };
});

describe('LeaderElection in DistributedLockModule', () => {
  it('is provided and exported by the module, on its backend, and resigns before the backend closes', async () => {
    const { Test } = await import('@nestjs/testing');
    const { Module } = await import('@nestjs/common');
    const { DistributedLockModule } = await import('../../lib/distributed-lock.module');
    const { LeaderElection } = await import('../../lib/leader-election/leader-election.service');
    const backend = new MemoryLockBackend();
    @Module({
      imports: [DistributedLockModule.forRoot({ backend, elections: { keyPrefix: 'app-elections', ttl: 1_000 } })],
    })
    class AppModule {}
    const app = await Test.createTestingModule({ imports: [AppModule] }).compile();
    await app.init();
    const elections = app.get(LeaderElection);
    const leadership = await elections.campaign('scheduler', { value: 'me' });
    expect(await elections.leader('scheduler')).toEqual({ value: 'me', term: leadership.term });
    await app.close();
    expect(leadership.state).toBe('resigned');
    // A second instance on the same backend would now lead at once.
    const { LockService } = await import('../../lib/lock.service');
    const other = new LeaderElection(new LockService(backend), { keyPrefix: 'app-elections' });
    const next = await other.campaign('scheduler', { value: 'next' });
    expect(next.term).toBeGreaterThan(leadership.term);
    await other.close();
  });
});

describe('Leadership on a slow server', () => {
  it('keeps leading when renewals take more than half the ttl: the watchdog sends a second beside a slow one', async () => {
    // The answer comes late, its effect does not: the validity still counts from when the renewal was sent.
    const backend = new MemoryLockBackend();
    const createElectionBackend = backend.createElectionBackend.bind(backend);
    backend.createElectionBackend = () => {
      const elections = createElectionBackend();
      const renew = elections.renew.bind(elections);
      elections.renew = async (grant, ttl) => {
        const validUntil = await renew(grant, ttl);
        await new Promise((resolve) => setTimeout(resolve, 1_600));
        return validUntil;
      };
      return elections;
    };
    const instance = instanceOn(backend, 3_000);
    try {
      const leadership = await instance.elections.campaign(uniqueName('slow'), { value: 'slow' });
      // One renewal after the other, each sent 1 s after the previous answer, would answer 4.2 s after the
      // previous one was sent: past the 3 s of validity that one gave.
      expect(await renewals(leadership, 5)).toHaveLength(5);
      expect(leadership.isLeader).toBe(true);
      await leadership.resign();
      expect(leadership.state).toBe('resigned');
    } finally {
      await instance.close();
      await backend.close();
    }
  }, 30_000);
});

describe('Leadership notices and lock scopes', () => {
  it("a leadership won inside a locked call delivers its renewals outside it: that call's locks are not the subscriber's", async () => {
    const { LockService } = await import('../../lib/lock.service');
    const { LeaderElection } = await import('../../lib/leader-election/leader-election.service');
    const locks = new LockService(new MemoryLockBackend());
    const elections = new LeaderElection(locks, { ttl: 300 });
    const seen = await locks.run('job:1', async () => {
      const leadership = await elections.campaign(uniqueName('scoped'));
      return new Promise<{ current: string | undefined; event: string }>((resolve) => {
        const subscription = leadership.events$.subscribe((event) => {
          subscription.unsubscribe();
          resolve({ current: locks.current()?.key, event: event.type });
        });
      });
    });
    expect(seen).toEqual({ current: undefined, event: 'renewed' });
    await elections.close();
    await locks.close();
  });
});
