import Redis, { type RedisOptions } from 'ioredis';
import { filter, firstValueFrom } from 'rxjs';
import { RedisLockBackend } from '../../lib/backends/redis/redis-lock.backend';
import { LockLostError, LockNotSupportedError } from '../../lib/errors';
import type { LeadershipEvent } from '../../lib/leader-election/leadership';
import { LeaderElection } from '../../lib/leader-election/leader-election.service';
import { LockService } from '../../lib/lock.service';
import { connectRedlockBackend } from '../redlock/redlock-support';
import { sharedRedisUrl } from '../support/shared-servers';
import { eventually } from '../support/time';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { electionContract, instanceOn, uniqueName, unreachableElectionCases, waitFor } from './election-contract';

const TTL = 1_500;

function redisInstance(url: string, ttl = TTL, clientOptions: RedisOptions = {}) {
  const client = new Redis(url, clientOptions);
  client.on('error', () => undefined);
  return instanceOn(new RedisLockBackend({ client, recheckInterval: 500 }), ttl, () => void client.disconnect());
}

unreachableElectionCases('redis', (port) => new RedisLockBackend({ url: `redis://127.0.0.1:${port}` }));
// A client whose commands wait for a connection far longer than the test (ioredis 6's backoff reaches minutes):
// the observer must still give up in bounded time, its reads each bounded by operationTimeout.
unreachableElectionCases(
  'redis, a client that waits minutes for a connection',
  (port) => new RedisLockBackend({ url: `redis://127.0.0.1:${port}`, redisOptions: { retryStrategy: () => 60_000 } }),
);

electionContract('redis', async () => ({
  ttl: TTL,
  proclaims: true,
  instance: async () => redisInstance(sharedRedisUrl()),
  close: async () => undefined,
}));

// ioredis' keyPrefix prefixes the election's keys, not its channel: observers must still hear every change.
electionContract('redis, with an ioredis keyPrefix', async () => ({
  ttl: TTL,
  proclaims: true,
  instance: async () => redisInstance(sharedRedisUrl(), TTL, { keyPrefix: 'app:' }),
  close: async () => undefined,
}));

describe('redis elections: keys, terms and loss', () => {
  let server: TestRedisServer;
  let admin: Redis;
  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    server.resume();
    admin.disconnect();
    await server.stop();
  });

  it('follows a leader written by an older version: bare channel messages, no proclaim step in the hash', async () => {
    const ours = redisInstance(server.url);
    try {
      const name = uniqueName('older');
      const [leaderKey, channel] = [`elections:{${name}}:leader`, `elections:{${name}}:changed`];
      const seen: (string | null)[] = [];
      const subscription = ours.elections.observe(name).subscribe((leader) => seen.push(leader?.value ?? null));
      const shows = (value: string | null) =>
        waitFor(
          () => seen.at(-1) === value,
          10_000,
          () => JSON.stringify(seen),
        );
      await waitFor(() => seen.length > 0);
      await admin.hset(leaderKey, 'token', 'old-version', 'value', 'v1', 'term', '42');
      await admin.pexpire(leaderKey, 30_000);
      await admin.publish(channel, 'elected');
      await shows('v1');
      await admin.hset(leaderKey, 'value', 'v2');
      await admin.publish(channel, 'proclaimed');
      await shows('v2');
      await admin.del(leaderKey);
      await admin.publish(channel, 'resigned');
      await shows(null);
      subscription.unsubscribe();
      expect(seen).toEqual([null, 'v1', 'v2', null]);
    } finally {
      await ours.close();
    }
  });

  it('keeps the leader in one hash with a ttl, and terms keep rising after the election went idle and its counter expired', async () => {
    const ours = redisInstance(server.url);
    try {
      const name = uniqueName('keys');
      const first = await ours.elections.campaign(name, { value: 'v' });
      const leaderKey = `elections:{${name}}:leader`;
      expect(await admin.hgetall(leaderKey)).toMatchObject({ value: 'v', term: first.term.toString() });
      const pttl = await admin.pttl(leaderKey);
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(TTL);
      await first.resign();
      expect(await admin.exists(leaderKey)).toBe(0);
      // Nothing per name stays forever: the counter expires too. Simulate that it did.
      expect(await admin.pttl(`elections:{${name}}:fence`)).toBeGreaterThan(0);
      await admin.del(`elections:{${name}}:fence`);
      const second = await ours.elections.campaign(name, { value: 'w' });
      expect(second.term).toBeGreaterThan(first.term);
      await second.resign();
    } finally {
      await ours.close();
    }
  });

  it('reports at-risk then lost, and aborts the signal, when renewals cannot reach a suspended server', async () => {
    const ours = redisInstance(server.url);
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
      const afterRenewals = events.slice(events.findLastIndex((event) => event.type === 'renewed') + 1);
      expect(afterRenewals.length).toBeGreaterThan(0);
      expect(afterRenewals.every((event) => event.type === 'at-risk')).toBe(true);
      // The first warning comes while validity remains (a renewal unanswered for a period), not with the loss.
      expect((afterRenewals[0] as Extract<LeadershipEvent, { type: 'at-risk' }>).remaining).toBeGreaterThan(0);
    } finally {
      server.resume();
      await ours.close();
    }
  });

  it('a campaign granted by a server that stalled past its ttl resolves with a leadership that lasts, not one already lost', async () => {
    const a = redisInstance(server.url);
    const b = redisInstance(server.url);
    try {
      const name = uniqueName('stalled');
      const first = await a.elections.campaign(name, { value: 'a' });
      const firstLost = new Promise<unknown>((resolve) => first.events$.subscribe({ error: resolve }));
      const second = b.elections.campaign(name, { value: 'b' });
      second.catch(() => undefined);
      await eventually(
        async () => ((await admin.pubsub('NUMSUB', `elections:{${name}}:changed`)) as [string, number])[1] === 1,
        'the second contender waiting on the election channel',
      );
      server.pause();
      try {
        await firstLost;
        // b's re-check went out during the stall; keep the server stopped past a whole ttl after it.
        await new Promise((resolve) => setTimeout(resolve, TTL + 200));
      } finally {
        server.resume();
      }
      const leadership = await second;
      // Found from outside: it resolved with its validity already over, and was lost (and resigned) at once.
      expect(leadership.signal.aborted).toBe(false);
      expect(leadership.isLeader).toBe(true);
      await firstValueFrom(leadership.events$.pipe(filter((event) => event.type === 'renewed')));
      expect(leadership.signal.aborted).toBe(false);
      expect(leadership.term > first.term).toBe(true);
      await leadership.resign();
    } finally {
      server.resume();
      await a.close();
      await b.close();
    }
  });

  it('reports the loss when the leader key is deleted behind its back, and a successor gets a larger term', async () => {
    const ours = redisInstance(server.url);
    try {
      const name = uniqueName('deleted');
      const leadership = await ours.elections.campaign(name, { value: 'x' });
      const ended = new Promise<unknown>((resolve) => leadership.events$.subscribe({ error: resolve }));
      await admin.del(`elections:{${name}}:leader`);
      expect(await ended).toBeInstanceOf(LockLostError);
      const next = await ours.elections.campaign(name, { value: 'y' });
      expect(next.term).toBeGreaterThan(leadership.term);
      await next.resign();
    } finally {
      await ours.close();
    }
  });
});

describe('Redlock refuses leader election', () => {
  it('rejects campaign and observe with LockNotSupportedError', async () => {
    const redlock = connectRedlockBackend(sharedRedisUrl());
    const elections = new LeaderElection(new LockService(redlock.backend));
    try {
      await expect(elections.campaign('x')).rejects.toBeInstanceOf(LockNotSupportedError);
      await expect(firstValueFrom(elections.observe('x'))).rejects.toBeInstanceOf(LockNotSupportedError);
    } finally {
      await elections.close();
      await redlock.close();
    }
  });
});
