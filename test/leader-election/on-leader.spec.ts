import { Injectable, INestApplicationContext, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { DistributedLockModule } from '../../lib/distributed-lock.module';
import { LeaderElection } from '../../lib/leader-election/leader-election.service';
import type { Leadership } from '../../lib/leader-election/leadership';
import { OnLeader } from '../../lib/leader-election/on-leader.decorator';
import { waitFor } from './election-contract';

@Injectable()
class Jobs {
  readonly runs: { term: bigint; stoppedBy?: unknown }[] = [];

  @OnLeader('jobs', { value: 'jobs-runner' })
  async lead(leadership: Leadership, stop: AbortSignal): Promise<void> {
    const run: { term: bigint; stoppedBy?: unknown } = { term: leadership.term };
    this.runs.push(run);
    await new Promise((resolve) => stop.addEventListener('abort', resolve, { once: true }));
    run.stoppedBy = stop.reason;
  }
}

async function start(backend: MemoryLockBackend): Promise<INestApplicationContext> {
  @Module({ imports: [DistributedLockModule.forRoot({ backend })], providers: [Jobs] })
  class AppModule {}
  const app = await Test.createTestingModule({ imports: [AppModule] }).compile();
  await app.init();
  return app;
}

describe('@OnLeader', () => {
  it('runs the method on the one instance that leads; on its shutdown the method stops and the other instance takes over', async () => {
    const backend = new MemoryLockBackend();
    const first = await start(backend);
    const second = await start(backend);
    try {
      const jobsA = first.get(Jobs);
      const jobsB = second.get(Jobs);
      await waitFor(() => jobsA.runs.length + jobsB.runs.length === 1);
      const [leader, follower] = jobsA.runs.length === 1 ? [first, second] : [second, first];
      const leaderJobs = leader.get(Jobs);
      const followerJobs = follower.get(Jobs);
      expect(await follower.get(LeaderElection).leader('jobs')).toEqual({
        value: 'jobs-runner',
        term: leaderJobs.runs[0].term,
      });
      expect(followerJobs.runs).toHaveLength(0);

      await leader.close();
      expect(leaderJobs.runs[0].stoppedBy).toBeDefined();
      await waitFor(() => followerJobs.runs.length === 1);
      expect(followerJobs.runs[0].term).toBeGreaterThan(leaderJobs.runs[0].term);
      expect(leaderJobs.runs).toHaveLength(1);
    } finally {
      await Promise.allSettled([first.close(), second.close()]);
    }
  });
});
