import Redis from 'ioredis';
import { firstValueFrom, skip } from 'rxjs';
import { LockService, RedisLockBackend } from '../../lib';
import { RenewalScheduler } from '../../lib/watchdog/renewal-scheduler';
import { sharedRedisUrl } from '../support/shared-servers';

const HELD = 1_000;

function activeTimers(): number {
  return process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
}

describe('Redis: many held locks renew through one scheduler and pipelined batches', () => {
  let client: Redis;
  let backend: RedisLockBackend;
  let locks: LockService;

  beforeAll(() => {
    client = new Redis(sharedRedisUrl());
    backend = new RedisLockBackend({ client });
    locks = new LockService(backend, { keyPrefix: 'batched-renewal' });
  });

  afterAll(async () => {
    await locks.close();
    client.disconnect();
  });

  it(`keeps ${HELD} locks renewed with one timer and far fewer round trips than renewals`, async () => {
    const timersBefore = activeTimers();
    const pipelines = jest.spyOn(client, 'pipeline');
    const handles = await Promise.all(
      Array.from({ length: HELD }, (_, i) => locks.acquire(`file:${i}`, { ttl: 4_000 })),
    );
    // Whatever each lock adds, it is not a timer of its own.
    expect(activeTimers() - timersBefore).toBeLessThanOrEqual(2);
    expect(RenewalScheduler.for(backend).size).toBe(HELD);

    // Every handle's own stream still reports its renewals: wait for the second one of each.
    await Promise.all(handles.map((handle) => firstValueFrom(handle.renewals$.pipe(skip(1)))));
    const renewals = HELD * 2;
    const batches = pipelines.mock.calls.length;
    expect(batches).toBeGreaterThan(0);
    expect(batches).toBeLessThan(renewals / 20);
    expect(handles.every((handle) => handle.isHeld)).toBe(true);
    expect(await client.pttl(`batched-renewal:{file:0}`)).toBeGreaterThan(1_000);

    await Promise.all(handles.map((handle) => handle.release()));
    expect(RenewalScheduler.for(backend).size).toBe(0);
    expect(await locks.isLocked('file:0')).toBe(false);
    pipelines.mockRestore();
  });
});
