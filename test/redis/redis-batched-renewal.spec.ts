import Redis from 'ioredis';
import { firstValueFrom, skip } from 'rxjs';
import { LockService, RedisLockBackend } from '../../lib';
import { RenewalScheduler } from '../../lib/watchdog/renewal-scheduler';
import { closeNodeRedisClient, createNodeRedisClient } from '../support/backends';
import { sharedRedisUrl } from '../support/shared-servers';

const HELD = 1_000;

function activeTimers(): number {
  return process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
}

/**
 * The app's client, and what counts as one round trip on it: an ioredis pipeline; on node-redis one call of
 * sendCommand (its client writes a tick's commands together, so a batch's calls share a write anyway; fewer
 * calls than renewals shows the extends were combined into extend-many scripts).
 */
interface ClientUnderTest {
  readonly client: Redis | ReturnType<typeof createNodeRedisClient>;
  countRoundTrips(): { count(): number; restore(): void };
  close(): Promise<void>;
}

const CLIENTS: [string, () => ClientUnderTest][] = [
  [
    'ioredis',
    () => {
      const client = new Redis(sharedRedisUrl());
      return {
        client,
        countRoundTrips: () => {
          const spy = jest.spyOn(client, 'pipeline');
          return { count: () => spy.mock.calls.length, restore: () => spy.mockRestore() };
        },
        close: async () => client.disconnect(),
      };
    },
  ],
  ...([2, 3] as const).map((resp): [string, () => ClientUnderTest] => [
    `node-redis RESP${resp}`,
    () => {
      const client = createNodeRedisClient(sharedRedisUrl(), resp);
      return {
        client,
        countRoundTrips: () => {
          const spy = jest.spyOn(client, 'sendCommand');
          return { count: () => spy.mock.calls.length, restore: () => spy.mockRestore() };
        },
        close: () => closeNodeRedisClient(client),
      };
    },
  ]),
];

describe.each(CLIENTS)('Redis over %s: many held locks renew through one scheduler and batches', (name, connect) => {
  let app: ClientUnderTest;
  let admin: Redis;
  let backend: RedisLockBackend;
  let locks: LockService;
  const prefix = `batched-renewal-${name.replace(/\W/g, '')}`;

  beforeAll(() => {
    app = connect();
    admin = new Redis(sharedRedisUrl());
    backend = new RedisLockBackend({ client: app.client });
    locks = new LockService(backend, { keyPrefix: prefix });
  });

  afterAll(async () => {
    await locks.close();
    await app.close();
    admin.disconnect();
  });

  it(`keeps ${HELD} locks renewed with one timer and far fewer round trips than renewals`, async () => {
    const timersBefore = activeTimers();
    const handles = await Promise.all(
      Array.from({ length: HELD }, (_, i) => locks.acquire(`file:${i}`, { ttl: 4_000 })),
    );
    // Whatever each lock adds, it is not a timer of its own.
    expect(activeTimers() - timersBefore).toBeLessThanOrEqual(2);
    expect(RenewalScheduler.for(backend).size).toBe(HELD);

    // Counted from here: the acquires above are not renewals.
    const roundTrips = app.countRoundTrips();
    // Every handle's own stream still reports its renewals: wait for the second one of each.
    await Promise.all(handles.map((handle) => firstValueFrom(handle.renewals$.pipe(skip(1)))));
    const renewals = HELD * 2;
    const batches = roundTrips.count();
    roundTrips.restore();
    expect(batches).toBeGreaterThan(0);
    expect(batches).toBeLessThan(renewals / 20);
    expect(handles.every((handle) => handle.isHeld)).toBe(true);
    expect(await admin.pttl(`${prefix}:{file:0}`)).toBeGreaterThan(1_000);

    await Promise.all(handles.map((handle) => handle.release()));
    expect(RenewalScheduler.for(backend).size).toBe(0);
    expect(await locks.isLocked('file:0')).toBe(false);
  });
});
