import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { electionContract, instanceOn } from './election-contract';

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
