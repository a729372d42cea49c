import { Etcd3 } from 'etcd3';
import { filter, firstValueFrom, toArray } from 'rxjs';
import { EtcdLockBackend } from '../../lib/backends/etcd/etcd-lock.backend';
import { LockLostError } from '../../lib/errors';
import type { LeadershipEvent } from '../../lib/leader-election/leadership';
import { sharedEtcdEndpoint } from '../support/shared-servers';
import { startEtcd, type TestEtcdServer } from '../support/etcd-server';
import { killAllLineProcesses, LineProcess } from '../support/line-process';
import {
  electionContract,
  instanceOn,
  leaderWhere,
  track,
  uniqueName,
  unreachableElectionCases,
} from './election-contract';

const TTL = 2_000;

function etcdInstance(endpoint: string, ttl = TTL) {
  const client = new Etcd3({ hosts: endpoint });
  return instanceOn(new EtcdLockBackend({ client }), ttl, () => client.close());
}

unreachableElectionCases('etcd', (port) => new EtcdLockBackend({ hosts: `http://127.0.0.1:${port}` }));

electionContract('etcd', async () => ({
  ttl: TTL,
  proclaims: true,
  instance: async () => etcdInstance(sharedEtcdEndpoint()),
  close: async () => undefined,
}));

describe('etcd elections interoperate with `etcdctl elect` (Go concurrency.Election)', () => {
  let admin: Etcd3;
  afterEach(() => killAllLineProcesses());
  beforeAll(() => (admin = new Etcd3({ hosts: sharedEtcdEndpoint() })));
  afterAll(() => admin.close());

  function etcdctl(...args: string[]): LineProcess {
    return LineProcess.spawn('etcdctl', [`--endpoints=${sharedEtcdEndpoint()}`, ...args]);
  }

  it('waits while etcdctl leads, sees its proposal, and leads with a larger term once etcdctl resigns', async () => {
    const name = uniqueName('etcdctl-leads');
    const ours = etcdInstance(sharedEtcdEndpoint());
    try {
      const theirs = etcdctl('elect', `elections/${name}`, 'their-proposal');
      // etcdctl prints its key, then its proposal, once it leads.
      const theirKey = await theirs.nextLine(`elections/${name}/`, 15_000);
      await theirs.nextLine('their-proposal', 5_000);
      const [kv] = (await admin.getAll().prefix(`elections/${name}/`).exec()).kvs;
      expect(kv.key.toString()).toBe(theirKey);
      const theirTerm = BigInt(kv.create_revision);
      expect(await ours.elections.leader(name)).toEqual({ value: 'their-proposal', term: theirTerm });

      const campaign = track(ours.elections.campaign(name, { value: 'our-proposal' }));
      // Our key queues behind theirs.
      await waitForKeys(admin, `elections/${name}/`, 2);
      expect(campaign.settled()).toBe(false);

      await theirs.kill('SIGINT'); // etcdctl elect resigns (deletes its key) on SIGINT
      const leadership = await campaign.promise;
      expect(leadership.term).toBeGreaterThan(theirTerm);
      expect(await ours.elections.leader(name)).toEqual({ value: 'our-proposal', term: leadership.term });
      await leadership.resign();
    } finally {
      await ours.close();
    }
  });

  it('is seen by `etcdctl elect -l` when it leads, proclaimed values included, and makes etcdctl wait', async () => {
    const name = uniqueName('ours-leads');
    const ours = etcdInstance(sharedEtcdEndpoint());
    try {
      const leadership = await ours.elections.campaign(name, { value: 'leader-one' });
      const listener = etcdctl('elect', '-l', `elections/${name}`);
      await listener.nextLine('leader-one', 15_000);
      await leadership.proclaim('leader-two');
      await listener.nextLine('leader-two', 15_000);

      const contender = etcdctl('elect', `elections/${name}`, 'etcdctl-proposal');
      await waitForKeys(admin, `elections/${name}/`, 2);
      await leadership.resign();
      // etcdctl leads only after our resign, and the observer follows.
      await contender.nextLine('etcdctl-proposal', 15_000);
      await listener.nextLine('etcdctl-proposal', 15_000);
      const leader = await ours.elections.leader(name);
      expect(leader?.value).toBe('etcdctl-proposal');
      expect(leader!.term).toBeGreaterThan(leadership.term);
      await contender.kill('SIGINT');
      await leaderWhere(ours.elections.observe(name), (current) => current === null);
    } finally {
      await ours.close();
    }
  });
});

describe('etcd leadership loss', () => {
  let server: TestEtcdServer;
  beforeAll(async () => (server = await startEtcd()));
  afterAll(async () => {
    server.resume();
    await server.stop();
  });

  it('reports at-risk then lost, and aborts the signal, when the lease cannot be renewed (server suspended)', async () => {
    const ours = etcdInstance(server.endpoint);
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
      expect(leadership.state).toBe('lost');
      expect(leadership.signal.aborted).toBe(true);
      expect(leadership.signal.reason).toBe(error);
      expect(leadership.isLeader).toBe(false);
      const afterRenewals = events.slice(events.findLastIndex((event) => event.type === 'renewed') + 1);
      expect(afterRenewals.length).toBeGreaterThan(0);
      expect(afterRenewals.every((event) => event.type === 'at-risk')).toBe(true);
      await expect(leadership.proclaim('too late')).rejects.toBe(error);
    } finally {
      server.resume();
      await ours.close();
    }
  });

  it('reports the loss when its key is deleted behind its back (an operator, or the lease revoked)', async () => {
    const ours = etcdInstance(server.endpoint);
    const admin = new Etcd3({ hosts: server.endpoint });
    try {
      const name = uniqueName('deleted');
      const leadership = await ours.elections.campaign(name, { value: 'x' });
      const events = firstValueFrom(leadership.events$.pipe(toArray())).catch((error: unknown) => error);
      await admin.delete().prefix(`elections/${name}/`).exec();
      await expect(events).resolves.toBeInstanceOf(LockLostError);
      expect(leadership.signal.aborted).toBe(true);
      // A new campaign leads with a larger term.
      const next = await ours.elections.campaign(name, { value: 'y' });
      expect(next.term).toBeGreaterThan(leadership.term);
      await next.resign();
    } finally {
      admin.close();
      await ours.close();
    }
  });
});

async function waitForKeys(client: Etcd3, prefix: string, count: number): Promise<void> {
  const until = Date.now() + 15_000;
  while ((await client.getAll().prefix(prefix).keys()).length < count) {
    if (Date.now() > until) throw new Error(`fewer than ${count} keys under ${prefix}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
