import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';
import { redisLockKeys } from '../../lib/backends/redis/redis-keys';
import { EXTEND_SCRIPT } from '../../lib/backends/redis/extend.lua';
import { REDLOCK_ACQUIRE_SCRIPT } from '../../lib/backends/redlock/redlock-acquire.lua';
import { REDLOCK_LEAVE_SCRIPT } from '../../lib/backends/redlock/redlock-release.lua';
import { redlockKeys, redlockReleaseCall } from '../../lib/backends/redlock/redlock-calls';
import { LockQuorumError } from '../../lib/errors';
import { RedlockBackend, type RedlockBackendOptions } from '../../lib/backends/redlock/redlock.backend';
import { LockBackendError, LockNotSupportedError, LockTimeoutError } from '../../lib/errors';
import { LockService } from '../../lib/lock.service';
import { closeRedisClient, uniqueNamespace } from '../support/backends';
import { startRedis, type TestRedisServer } from '../support/redis-server';
import { sleep } from '../support/time';
import { eventually } from '../redis/redis-spec-helpers';

const MARGIN = 5_000;

describe.each([3, 5])('Redlock over %i redis-server processes', (count) => {
  const quorum = Math.floor(count / 2) + 1;
  let servers: TestRedisServer[] = [];
  let admins: Redis[] = [];
  let ns: string;
  const killed = new Set<number>();
  const opened: { close(): Promise<unknown> }[] = [];
  const clients: Redis[] = [];

  beforeAll(async () => {
    servers = await Promise.all(Array.from({ length: count }, () => startRedis()));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  beforeEach(() => {
    ns = uniqueNamespace(`redlock${count}`);
    admins = servers.map((server) => quietClient(server.url));
  });

  afterEach(async () => {
    // Killed instances come back empty, on the same port, for the next test. Close connections only once they
    // reconnected: ioredis keeps a 2 s timer alive for a connection closed while its server is down.
    await Promise.all([...killed].map((index) => servers[index].restart()));
    killed.clear();
    await eventually(
      async () => clients.every((client) => client.status === 'ready' || client.status === 'end'),
      10_000,
    );
    for (const resource of opened.splice(0).reverse()) await resource.close();
    await Promise.all(clients.splice(0).map(closeRedisClient));
  });

  /** A client that reconnects every 100 ms, so it is back soon after its instance restarted. */
  function quietClient(url: string): Redis {
    const client = new Redis(url, { retryStrategy: () => 100 });
    client.on('error', () => undefined);
    clients.push(client);
    return client;
  }

  /** A RedlockBackend on new connections to every server (an app instance). */
  function backend(tuning: Omit<RedlockBackendOptions, 'clients'> = {}): RedlockBackend {
    const created = new RedlockBackend({ clients: servers.map((server) => quietClient(server.url)), ...tuning });
    opened.push(created);
    return created;
  }

  function service(tuning: Omit<RedlockBackendOptions, 'clients'> = {}): LockService {
    const locks = new LockService(backend(tuning), { keyPrefix: ns });
    opened.push(locks);
    return locks;
  }

  async function kill(...indexes: number[]): Promise<void> {
    for (const index of indexes) {
      killed.add(index);
      await servers[index].kill('SIGKILL');
    }
  }

  /** Keys this test left on instance `index`, except the fencing counters (which stay for the ttl + retention). */
  async function strayKeys(index: number): Promise<string[]> {
    const keys = await admins[index].keys(`${ns}:*`); // ns is ours ([A-Za-z0-9.:-]), never user text
    return keys.filter((key) => !key.endsWith(':fence'));
  }

  it('grants on every instance, with a fencing token a majority of counters agrees on, and releases everywhere', async () => {
    const locks = service();
    const lock = await locks.acquire('doc', { ttl: 10_000 });
    const names = redisLockKeys(ns, 'doc');
    const values = await Promise.all(admins.map((admin) => admin.get(names.lock)));
    expect(values.filter((value) => value === lock.token).length).toBeGreaterThanOrEqual(quorum);
    const counters = await Promise.all(admins.map(async (admin) => BigInt((await admin.get(names.fence)) ?? '0')));
    expect(counters.filter((counter) => counter >= lock.fencingToken).length).toBeGreaterThanOrEqual(quorum);
    expect(await locks.isLocked('doc')).toBe(true);

    await lock.release();
    expect(await Promise.all(admins.map((admin) => admin.exists(names.lock)))).toEqual(servers.map(() => 0));
    expect(await locks.isLocked('doc')).toBe(false);
  });

  it('a busy lock ends in LockTimeoutError (not a quorum error), and a waiter is woken by the release', async () => {
    const holder = service();
    const held = await holder.acquire('busy', { ttl: 20_000 });
    const waiter = service({ recheckInterval: 30_000 });
    await expect(waiter.acquire('busy', { waitTimeout: 500 })).rejects.toBeInstanceOf(LockTimeoutError);
    expect(await waiter.tryAcquire('busy')).toBeNull();

    const waiting = waiter.acquire('busy', { ttl: 10_000, waitTimeout: 20_000 });
    await sleep(300); // let it subscribe and wait
    const releasedAt = performance.now();
    await held.release();
    const lock = await waiting;
    expect(performance.now() - releasedAt).toBeLessThan(MARGIN);
    expect(lock.fencingToken).toBeGreaterThan(held.fencingToken);
    await lock.release();
  });

  it('a busy lock ends in LockTimeoutError when the wait ends while a minority has not answered yet', async () => {
    const holder = service();
    const held = await holder.acquire('busy-silent', { ttl: 20_000 });
    const silent = Array.from({ length: count - quorum }, (_, index) => count - 1 - index);
    for (const index of silent) servers[index].pause();
    try {
      // requestTimeout (1 s by default) outlasts the wait: the round is still open when waitTimeout ends.
      const waiter = service();
      const error = await waiter.acquire('busy-silent', { waitTimeout: 500 }).catch((failure: unknown) => failure);
      // Before, the silent minority made it a LockQuorumError, though a majority had answered "busy".
      expect(error).toBeInstanceOf(LockTimeoutError);
    } finally {
      for (const index of silent) servers[index].resume();
    }
    await held.release();
  });

  it('a held key with a majority silent (paused, connections open) ends in LockQuorumError naming them, not LockTimeoutError', async () => {
    const holder = service();
    const held = await holder.acquire('busy-majority-silent', { ttl: 20_000 });
    const silent = Array.from({ length: quorum }, (_, index) => count - 1 - index);
    for (const index of silent) servers[index].pause();
    try {
      const waiter = service({ requestTimeout: 300 });
      // Found from outside: one "busy" answer and a silent majority read as a held key (409), hiding the outage.
      for (const attempt of [
        () => waiter.tryAcquire('busy-majority-silent'),
        () => waiter.acquire('busy-majority-silent', { waitTimeout: 0 }),
        () => waiter.acquire('busy-majority-silent', { waitTimeout: 1_000 }),
      ]) {
        const error = await attempt().catch((failure: unknown) => failure);
        expect(error).toBeInstanceOf(LockQuorumError);
        for (const index of silent) {
          expect((error as LockQuorumError).failedAddresses).toContain(`127.0.0.1:${servers[index].port}`);
        }
      }
    } finally {
      for (const index of silent) servers[index].resume();
    }
    await held.release();
  });

  it(`still grants, extends and releases with ${count - quorum} instance(s) down`, async () => {
    const down = Array.from({ length: count - quorum }, (_, index) => index);
    await kill(...down);
    const locks = service();
    const lock = await locks.acquire('degraded', { ttl: 1_500, waitTimeout: 5_000 });
    const renewal = await new Promise((resolve, reject) => lock.renewals$.subscribe({ next: resolve, error: reject }));
    expect(renewal).toMatchObject({ type: 'renewed' });
    expect(await locks.isLocked('degraded')).toBe(true);
    await lock.release();
    expect(await locks.isLocked('degraded')).toBe(false);
  });

  it('with a majority down: LockQuorumError naming the failed instances within waitTimeout, and no stray keys on the live ones', async () => {
    // The last ones, so that the live instances are asked first and do grant (and must be cleaned up).
    const down = Array.from({ length: quorum }, (_, index) => count - quorum + index);
    await kill(...down);
    const locks = service({ requestTimeout: 500 });
    const waitTimeout = 2_000;
    const startedAt = performance.now();
    const error = await locks.acquire('down', { ttl: 10_000, waitTimeout }).catch((failure: unknown) => failure);
    expect(performance.now() - startedAt).toBeLessThan(waitTimeout + MARGIN);
    expect(error).toBeInstanceOf(LockQuorumError);
    expect(error).toBeInstanceOf(LockBackendError);
    const quorumError = error as LockQuorumError;
    expect(quorumError.name).toBe('LockQuorumError');
    for (const index of down) expect(quorumError.failedAddresses).toContain(`127.0.0.1:${servers[index].port}`);
    for (const index of down) expect(quorumError.message).toContain(String(servers[index].port));
    await expect(locks.tryAcquire('down')).rejects.toBeInstanceOf(LockQuorumError);
    await expect(locks.isLocked('down')).rejects.toBeInstanceOf(LockQuorumError);

    await locks.close();
    for (let index = 0; index < count - quorum; index++) {
      await eventually(async () => (await strayKeys(index)).length === 0, 3_000);
    }
  });

  it('a waiter whose process already listens on the key asks once before it sleeps, and once when woken', async () => {
    // The acquire scripts this process sends to master 0, as sent (the server still runs every one of them).
    const clients = servers.map((server) => quietClient(server.url));
    const sent: string[][] = [];
    const evalsha = clients[0].evalsha.bind(clients[0]) as (...args: unknown[]) => Promise<unknown>;
    (clients[0] as unknown as { evalsha: (...args: unknown[]) => Promise<unknown> }).evalsha = (...args) => {
      sent.push(args.map(String));
      return evalsha(...args);
    };
    const roundsOf = (entry: string) =>
      sent.filter((args) => args[0] === REDLOCK_ACQUIRE_SCRIPT.sha1 && args.includes(entry.slice(1)));
    // No timed re-check inside the test (a waiter also re-checks at a third of waiterTtl, to refresh its entry):
    // every round below is one the waiter chose to send.
    const backend = new RedlockBackend({ clients, recheckInterval: 60_000, waiterTtl: 180_000 });
    const locks = new LockService(backend, { keyPrefix: ns });
    opened.push(locks);
    const names = redlockKeys(ns, 'line');
    // Another process holds the key on every instance. (A holder of ours might hold on a majority only: a round
    // ends there, and a later grant is given back. The waiters' rounds would then split on the free instance.)
    const holder = { namespace: ns, key: 'line', token: 'other-process', ttl: 10_000 };
    await Promise.all(admins.map((admin) => admin.set(names.lock, holder.token, 'PX', holder.ttl)));

    const first = locks.acquire('line', { ttl: 10_000, waitTimeout: 30_000 });
    await eventually(async () => (await admins[0].zcard(names.waiters)) === 1, 10_000);
    const [firstEntry] = await admins[0].zrange(names.waiters, 0, -1);
    // The first waiter sends its second round once every instance confirmed its subscription to this process.
    // (The server's NUMSUB counts a subscription before the client has read the confirmation: not enough.)
    await eventually(async () => roundsOf(firstEntry).length >= 2, 10_000);
    const second = locks.acquire('line', { ttl: 10_000, waitTimeout: 30_000 });
    const inLine = async () =>
      (await Promise.all(admins.map((admin) => admin.zcard(names.waiters)))).every((entries) => entries === 2);
    await eventually(inLine, 10_000);
    const secondEntry = (await admins[0].zrange(names.waiters, 0, -1)).find((entry) => entry !== firstEntry)!;

    // The holder lets go with the release script on every instance, which wakes the head of the line there.
    const release = redlockReleaseCall(holder);
    const released = await Promise.all(
      admins.map((admin) => admin.eval(release.script.source, release.keys.length, ...release.keys, ...release.args)),
    );
    expect(released).toEqual(admins.map(() => 1));
    await (await first).release();
    await (await second).release();
    // The round that put it in line, and the one its wake-up sent. A second round before sleeping is one
    // more quorum round per contended acquire; a wake by the first waiter's late grant, given back, another.
    expect(roundsOf(secondEntry)).toHaveLength(2);
  });

  it('gives back a grant that came after its round was won without waking the waiter at the head there', async () => {
    const names = redlockKeys(ns, 'late');
    const late = admins[count - 1];
    // A waiter in line on the last instance only (another process's), listened for on that instance.
    await late.zadd(names.waiters, 1, 'wsomeone');
    await late.zadd(names.waitersExpiry, Date.now() + 60_000, 'wsomeone');
    const listener = quietClient(servers[count - 1].url);
    const heard: string[] = [];
    listener.on('message', (_channel: string, message: string) => heard.push(message));
    await listener.subscribe(names.channel);
    // The last instance runs no write for a while: the majority grants first, the last one's grant comes late.
    await late.call('CLIENT', 'PAUSE', '300', 'WRITE');
    const lock = await service().acquire('late', { ttl: 10_000 });
    // The late grant was made (its fencing counter is there) and given back (the key is gone).
    await eventually(async () => (await late.exists(names.fence)) === 1 && (await late.exists(names.lock)) === 0);
    // Any message published before this PING reached the listener before its answer.
    await listener.ping();
    expect(heard).toEqual([]);
    await lock.release();
    await listener.unsubscribe();
  });

  it('releases partial grants at once when another owner holds the key on a majority', async () => {
    const names = redisLockKeys(ns, 'split');
    // Another owner on a majority of instances, as a raw client would place it.
    for (let index = 0; index < quorum; index++) await admins[index].set(names.lock, 'someone-else', 'PX', 20_000);
    const redlock = backend();
    const request = { namespace: ns, key: 'split', token: randomUUID(), ttl: 10_000 };
    expect(await redlock.tryAcquire(request)).toBeNull();
    for (let index = quorum; index < count; index++) {
      await eventually(async () => (await admins[index].get(names.lock)) === null, 1_000);
    }
    for (let index = 0; index < quorum; index++) expect(await admins[index].get(names.lock)).toBe('someone-else');
  });

  it('a writer granted by a majority takes back the waiter entry it left on the instances that answered busy', async () => {
    const names = redlockKeys(ns, 'minority');
    // A stale holder on instance 0 for long, and on instances 1..quorum-1 briefly: the first rounds are busy
    // (so the waiting writer puts its entry in line everywhere), then a majority frees up while instance 0 stays busy.
    await admins[0].set(names.lock, 'stale-holder', 'PX', 20_000);
    for (let index = 1; index < quorum; index++) await admins[index].set(names.lock, 'brief-holder', 'PX', 400);
    const locks = service({ recheckInterval: 100 });
    const lock = await locks.acquire('minority', { ttl: 10_000, waitTimeout: 10_000 });
    expect(await admins[0].get(names.lock)).toBe('stale-holder');
    // Without taking it back, the entry (and its reservation) would stay in line on instance 0 until it expired (waiterTtl, 5 s).
    await eventually(
      async () => (await admins[0].exists(names.waiters, names.waitersExpiry, names.reservation)) === 0,
      2_000,
    );
    await lock.release();
  });

  it("takes a waiter's entry back behind a busy answer that came after the grant (NOSCRIPT, then EVAL)", async () => {
    const names = redlockKeys(ns, 'late-busy');
    const last = admins[count - 1];
    await last.set(names.lock, 'stale-holder', 'PX', 20_000);
    // The last instance restarted (no scripts) but has since loaded the leave script, and it is stuck for a moment:
    // its acquire meets NOSCRIPT after the others decided the round, and is sent again as EVAL, after the leave.
    await last.script('FLUSH');
    await last.script('LOAD', REDLOCK_LEAVE_SCRIPT.source);
    await last.config('RESETSTAT');
    const redlock = backend();
    const request = { namespace: ns, key: 'late-busy', token: randomUUID(), ttl: 10_000 };
    const busy = new Redis(servers[count - 1].url);
    const stuck = busy.eval(
      "local t = redis.call('TIME') local s = t[1] * 1000000 + t[2] repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] > s + 300000 return 1",
      0,
    );
    await sleep(20); // let the busy script start
    const grant = await redlock.acquire(request, new AbortController().signal);
    await stuck;
    await busy.quit();
    await eventually(async () => /cmdstat_eval:calls=[1-9]/.test(await last.info('commandstats')), 2_000);
    // Without waiting for that EVAL, the entry would stay until it expired (waiterTtl, 5 s).
    await eventually(
      async () => (await last.exists(names.waiters, names.waitersExpiry, names.reservation)) === 0,
      2_000,
    );
    expect(await last.get(names.lock)).toBe('stale-holder');
    await redlock.release({ ...request, fencingToken: grant.fencingToken });
  });

  it('an extension needs a majority: null once a majority is lost, LockQuorumError when too few answer', async () => {
    const redlock = backend({ requestTimeout: 500 });
    const request = { namespace: ns, key: 'extend', token: randomUUID(), ttl: 10_000 };
    const grant = await redlock.tryAcquire(request);
    const lock = { ...request, fencingToken: grant!.fencingToken };
    expect(await redlock.extend(lock, 10_000)).toEqual(expect.any(Number));

    // Taken over on a majority behind our back: no longer ours.
    const names = redisLockKeys(ns, 'extend');
    for (let index = 0; index < quorum; index++) await admins[index].set(names.lock, 'someone-else', 'PX', 20_000);
    expect(await redlock.extend(lock, 10_000)).toBeNull();
    expect(await redlock.extendMany([{ lock, ttl: 10_000 }])).toEqual([null]);

    // Held again, then a majority goes down: we cannot tell, so it is a transport error (the core retries).
    await Promise.all(admins.map((admin) => admin.set(names.lock, request.token, 'PX', 20_000)));
    await kill(...Array.from({ length: quorum }, (_, index) => index));
    await expect(redlock.extend(lock, 10_000)).rejects.toBeInstanceOf(LockQuorumError);
    const [batched] = await redlock.extendMany([{ lock, ttl: 10_000 }]);
    expect(batched).toBeInstanceOf(LockQuorumError);
  });

  it('fencing tokens keep increasing when the next majority is another set of instances', async () => {
    const names = redisLockKeys(ns, 'fence');
    const minority = count - quorum;
    // Instance 0 runs an hour ahead (say, its clock once jumped). With the last instances down, the majority is
    // exactly 0..quorum-1, so the grant takes instance 0's value and raises the others of that majority to it.
    const ahead = BigInt(Date.now()) * 1_000n + 3_600_000_000n;
    await admins[0].set(names.fence, ahead.toString());
    await kill(...Array.from({ length: minority }, (_, index) => quorum + index));
    const locks = service();
    const first = await locks.acquire('fence', { ttl: 10_000, waitTimeout: 5_000 });
    expect(first.fencingToken).toBeGreaterThan(ahead);
    await first.release();
    // The raised counters live until their own clocks pass the token (an hour), not just the ttl + retention.
    for (let index = 1; index < quorum; index++)
      expect(await admins[index].pttl(names.fence)).toBeGreaterThan(3_500_000);

    // Now the first instances go and the last come back empty: the new majority shares only raised counters
    // with the old one. Without the raise, every counter it holds would be an hour behind the first token.
    for (let index = 0; index < minority; index++) {
      await servers[quorum + index].restart();
      killed.delete(quorum + index);
    }
    await kill(...Array.from({ length: minority }, (_, index) => index));
    const second = await locks.acquire('fence', { ttl: 10_000, waitTimeout: 10_000 });
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    await second.release();
  });

  it('leaves no key behind on any instance once ttl + fenceRetention passed, and none without expiry before', async () => {
    const locks = service({ fenceRetention: 200 });
    const names = Array.from({ length: 50 }, (_, index) => `order:${index}`);
    // A ttl of 2 s gives each instance up to 1 s to answer (ttl / 2): 50 acquires at once on a loaded machine.
    const handles = await Promise.all(names.map((name) => locks.acquire(name, { ttl: 2_000, waitTimeout: 0 })));
    // A grant needs only a majority: an instance that answered late has its copy released (onLate), so on a
    // loaded machine one minority instance may hold nothing. Every key present must still expire.
    let holding = 0;
    for (const admin of admins) {
      const keys = await admin.keys(`${ns}:*`); // ns is ours, never user text
      if (keys.length > 0) holding++;
      const ttls = await Promise.all(keys.map((key) => admin.pttl(key)));
      expect(keys.filter((_, index) => ttls[index] === -1)).toEqual([]);
    }
    expect(holding).toBeGreaterThanOrEqual(quorum);
    await Promise.all(handles.map((handle) => handle.release()));
    for (const admin of admins)
      await eventually(async () => (await admin.keys(`${ns}:*`)).length === 0, 2_000 + 200 + 3_000);
  });

  it('read/write locks: readers share a quorum, writers exclude them', async () => {
    const a = service();
    const b = service();
    const readers = await Promise.all([a, b].map((locks) => locks.acquire('rw', { mode: 'read', waitTimeout: 0 })));
    expect(await a.tryAcquire('rw', { mode: 'write' })).toBeNull();
    expect(await a.isLocked('rw')).toBe(true);
    const writer = b.acquire('rw', { mode: 'write', waitTimeout: 10_000 });
    await Promise.all(readers.map((reader) => reader.release()));
    const held = await writer;
    expect(held.fencingToken).toBeGreaterThan(readers[1].fencingToken);
    expect(await a.tryAcquire('rw', { mode: 'read' })).toBeNull();
    await held.release();
  });

  it('refuses semaphores with LockNotSupportedError: a majority per holder does not bound the holders', async () => {
    const locks = service();
    await expect(locks.acquire('pool', { permits: 2 })).rejects.toBeInstanceOf(LockNotSupportedError);
  });

  it('renews many held locks with one pipeline per instance', async () => {
    const own = servers.map((server) => quietClient(server.url));
    const redlock = new RedlockBackend({ clients: own });
    opened.push(redlock);
    const requests = Array.from({ length: 20 }, (_, index) => ({
      namespace: ns,
      key: `many:${index}`,
      token: randomUUID(),
      ttl: 10_000,
    }));
    const grants = await Promise.all(requests.map((request) => redlock.tryAcquire(request)));
    const locks = requests.map((request, index) => ({ ...request, fencingToken: grants[index]!.fencingToken }));
    // Steady state: every instance has the extend script (a first batch also loads it, with one more pipeline).
    await Promise.all(own.map((client) => client.script('LOAD', EXTEND_SCRIPT.source)));
    const pipelines = own.map((client) => jest.spyOn(client, 'pipeline'));
    const results = await redlock.extendMany(locks.map((lock) => ({ lock, ttl: 20_000 })));
    expect(pipelines.map((spy) => spy.mock.calls.length)).toEqual(servers.map(() => 1));
    expect(results.every((result) => typeof result === 'number')).toBe(true);
  });

  it('refuses a client listed twice, since a majority would then mean nothing', () => {
    const client = quietClient(servers[0].url);
    const other = quietClient(servers[1].url);
    expect(() => new RedlockBackend({ clients: [client, client, other] })).toThrow(/listed twice/);
    expect(() => new RedlockBackend({ clients: [] })).toThrow(/needs \{ clients/);
  });
});
