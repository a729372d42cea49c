import { join } from 'node:path';
import { filter, firstValueFrom } from 'rxjs';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper-lock.backend';
import { lockPath } from '../../lib/backends/zookeeper/zookeeper-node-layout';
import { LockLostError } from '../../lib/errors';
import type { LeadershipEvent } from '../../lib/leader-election/leadership';
import {
  compileCuratorProgram,
  type CuratorProgram,
  findJava,
  startZooKeeper,
  TestZooKeeperServer,
} from '../support/zookeeper-server';
import { killAllLineProcesses, LineProcess } from '../support/line-process';
import { within } from '../support/time';
import { AdminClient } from '../zookeeper/zookeeper-spec-helpers';
import {
  electionContract,
  instanceOn,
  leaderWhere,
  track,
  uniqueName,
  unreachableElectionCases,
} from './election-contract';

const TTL = 2_000;
const JAVA_TIMEOUT = 60_000;
const LATCH_NODE = /^_c_[0-9a-f-]{36}-latch-\d{10}$/;

let server: TestZooKeeperServer;
beforeAll(async () => {
  server = await startZooKeeper();
}, 90_000);
afterAll(async () => {
  await server?.stop();
});

function zookeeperInstance(sessionTimeout = 4_000) {
  return instanceOn(new ZooKeeperLockBackend({ connectionString: server.connectionString, sessionTimeout }), TTL);
}

unreachableElectionCases('zookeeper', (port) => new ZooKeeperLockBackend({ connectionString: `127.0.0.1:${port}` }));

electionContract('zookeeper', async () => ({
  ttl: TTL,
  proclaims: false,
  instance: async () => zookeeperInstance(),
  close: async () => undefined,
}));

describe("ZooKeeper elections interoperate with Curator's LeaderLatch", () => {
  let admin: AdminClient;
  let program: CuratorProgram | undefined;

  const latch = (name: string, id: string) =>
    LineProcess.spawn(findJava(), [
      '-XX:TieredStopAtLevel=1',
      '-cp',
      program!.classpath,
      'CuratorLeaderLatch',
      server.connectionString,
      lockPath('elections', name),
      id,
    ]);

  beforeAll(async () => {
    program = await compileCuratorProgram(join(__dirname, 'java', 'CuratorLeaderLatch.java'));
    admin = await AdminClient.connect(server.connectionString);
  }, 90_000);
  afterEach(() => killAllLineProcesses());
  afterAll(() => {
    admin?.close();
    program?.dispose();
  });

  it('Curator leads: we wait and see its id; after it closes the latch we lead with a larger term', async () => {
    const name = uniqueName('curator-leads');
    const ours = zookeeperInstance();
    try {
      const java = latch(name, 'java-participant');
      await java.nextLine('LEADER', JAVA_TIMEOUT);
      const [javaNode] = await admin.contenders(name, 'elections');
      expect(javaNode).toMatch(LATCH_NODE);
      const leader = await ours.elections.leader(name);
      expect(leader?.value).toBe('java-participant');

      const campaign = track(ours.elections.campaign(name, { value: 'node-participant' }));
      await waitForContenders(admin, name, 2);
      expect(campaign.settled()).toBe(false);
      const nodes = await admin.contenders(name, 'elections');
      expect(nodes.every((node) => LATCH_NODE.test(node))).toBe(true);

      java.writeLine('close');
      await java.nextLine('CLOSED', JAVA_TIMEOUT);
      const leadership = await campaign.promise;
      expect(leadership.term).toBeGreaterThan(leader!.term);
      await leadership.resign();
    } finally {
      await ours.close();
    }
  });

  it('we lead: Curator waits and its getLeader() names our value; it leads once we resign (proclaim is refused)', async () => {
    const name = uniqueName('node-leads');
    const ours = zookeeperInstance();
    try {
      const leadership = await ours.elections.campaign(name, { value: 'node-leader' });
      const java = latch(name, 'java-follower');
      await java.nextLine('STARTED', JAVA_TIMEOUT);
      await waitForContenders(admin, name, 2);
      java.writeLine('leader');
      expect(await java.nextLine('SEES', JAVA_TIMEOUT)).toBe('SEES node-leader');
      // Refused: a data change would use up Curator's one-shot watch on our node, and Java would never take over.
      await expect(leadership.proclaim('node-leader-2')).rejects.toThrow(/LeaderLatch/);

      await leadership.resign();
      await java.nextLine('LEADER', JAVA_TIMEOUT);
      const next = await leaderWhere(ours.elections.observe(name), (current) => current?.value === 'java-follower');
      expect(next!.term).toBeGreaterThan(leadership.term);
      java.writeLine('close');
      await java.nextLine('CLOSED', JAVA_TIMEOUT);
    } finally {
      await ours.close();
    }
  });
});

describe('ZooKeeper observers', () => {
  it('leave no node behind on a name nobody campaigns in, and see the first leader once the latch path appears', async () => {
    const ours = zookeeperInstance();
    const admin = await AdminClient.connect(server.connectionString);
    try {
      const name = uniqueName('observed-only');
      await leaderWhere(ours.elections.observe(name), (leader) => leader === null);
      expect(await admin.stat(lockPath('elections', name))).toBeNull();
      const seen = leaderWhere(ours.elections.observe(name), (leader) => leader?.value === 'late');
      const other = zookeeperInstance();
      try {
        const leadership = await other.elections.campaign(name, { value: 'late' });
        expect((await seen)?.term).toBe(leadership.term);
        await leadership.resign();
      } finally {
        await other.close();
      }
    } finally {
      admin.close();
      await ours.close();
    }
  });
});

describe('ZooKeeper leadership loss', () => {
  it('reports at-risk then lost, and aborts the signal, when the session expires behind a suspended server', async () => {
    const ours = zookeeperInstance(2_000);
    try {
      const leadership = await ours.elections.campaign(uniqueName('suspended'), { value: 'doomed' });
      const events: LeadershipEvent[] = [];
      const ended = new Promise<unknown>((resolve) =>
        leadership.events$.subscribe({ next: (event) => events.push(event), error: resolve }),
      );
      await firstValueFrom(leadership.events$.pipe(filter((event) => event.type === 'renewed')));
      server.pause();
      const error = await ended;
      server.resume();
      expect(error).toBeInstanceOf(LockLostError);
      expect(leadership.signal.aborted).toBe(true);
      expect(leadership.state).toBe('lost');
      const afterRenewals = events.slice(events.findLastIndex((event) => event.type === 'renewed') + 1);
      expect(afterRenewals.length).toBeGreaterThan(0);
      expect(afterRenewals.every((event) => event.type === 'at-risk')).toBe(true);
    } finally {
      server.resume();
      await ours.close();
    }
  });
});

describe('ZooKeeper observe() across a session expiry', () => {
  it("keeps following: a leader elected after the observer's session expired is reported", async () => {
    const name = uniqueName('observe-expiry');
    const observer = zookeeperInstance(2_000);
    const before = zookeeperInstance(2_000);
    const after = zookeeperInstance();
    const seen: (string | null)[] = [];
    let reportedAfter!: () => void;
    const afterReported = new Promise<void>((resolve) => (reportedAfter = resolve));
    const subscription = observer.elections.observe(name).subscribe({
      next: (leader) => {
        seen.push(leader?.value ?? null);
        if (leader?.value === 'after') reportedAfter();
      },
      error: (error: unknown) => seen.push(`error: ${String(error)}`),
    });
    try {
      await before.elections.campaign(name, { value: 'before' });
      await leaderWhere(observer.elections.observe(name), (leader) => leader?.value === 'before');
      // Past both 2 s sessions: the server expires them when it runs again, and with them the observer's watches.
      server.pause();
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      server.resume();
      await after.elections.campaign(name, { value: 'after' });
      // Before, the observer's one-shot watches had died with its session: it never reported 'after'.
      await within(afterReported, 20_000, 'the observer reporting the leader elected after the expiry');
      expect(seen.filter((value) => value?.startsWith('error'))).toEqual([]);
    } finally {
      server.resume();
      subscription.unsubscribe();
      await Promise.all([observer.close(), before.close(), after.close()]);
    }
  }, 60_000);
});

async function waitForContenders(admin: AdminClient, name: string, count: number): Promise<void> {
  const until = Date.now() + 15_000;
  while ((await admin.contenders(name, 'elections')).length < count) {
    if (Date.now() > until) throw new Error(`fewer than ${count} participants in ${name}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
