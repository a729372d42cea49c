import { connectBackend } from '../support/backends';
import { sharedEtcdEndpoint, sharedRedisUrl } from '../support/shared-servers';
import { LockService } from '../../lib/lock.service';
import type { ScheduledAppMessage } from './support/scheduled-app-protocol';
import { ScheduledApps } from './support/scheduled-apps';

type Ran = Extract<ScheduledAppMessage, { type: 'ran' }>;

const RUN_FOR_MS = 10_000;
/**
 * A second in which no instance fired at all (cron skips a firing more than 250 ms late, as on a starved 2-core
 * machine) is told apart by the absence of any 'skipped' report, and allowed this many times. Any second that was
 * fired is asserted to run exactly once.
 */
const UNFIRED_SECONDS_ALLOWED = 2;
const LOCK_AT_LEAST_FOR = 8_000;

const fireTime = (key: string) => Date.parse(key.slice('tick:'.length));

describe.each([
  { kind: 'redis' as const, address: () => sharedRedisUrl() },
  { kind: 'etcd' as const, address: () => sharedEtcdEndpoint() },
])('@ScheduledLock with 3 app processes on $kind', ({ kind, address }) => {
  const apps = new ScheduledApps();

  afterAll(() => apps.killAll());

  it('runs each 1-second cron firing on exactly one instance, also after the instance running one is SIGKILLed', async () => {
    const keyPrefix = `scheduled-${kind}-${process.pid}-${Date.now()}`;
    await apps.start(3, { kind, address: address(), keyPrefix, workMs: 300, lockAtLeastFor: LOCK_AT_LEAST_FOR });
    const first = (await apps.next((message) => message.type === 'ran', 10_000, 'first firing')) as Ran;
    const started = Date.now();

    // Kill the instance while it runs a firing (its work takes 300 ms after it reported 'ran').
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    const victim = (await apps.next((message) => message.type === 'ran', 5_000, 'a firing to interrupt')) as Ran;
    await apps.kill(victim.pid);

    await new Promise((resolve) => setTimeout(resolve, Math.max(0, RUN_FOR_MS - (Date.now() - started))));
    await apps.stopAll();

    const runs = apps.messages.filter((message): message is Ran => message.type === 'ran');
    const skipped = new Set(apps.messages.flatMap((message) => (message.type === 'skipped' ? [message.key] : [])));
    for (const run of runs) expect(run.key).toMatch(/^tick:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);

    // At most once, for every firing.
    const byKey = new Map<string, Ran[]>();
    for (const run of runs) byKey.set(run.key, [...(byKey.get(run.key) ?? []), run]);
    expect([...byKey].filter(([, list]) => list.length > 1)).toEqual([]);

    // Exactly once for every second from the first to the last that any instance fired.
    const seconds = runs.map((run) => fireTime(run.key)).sort((x, y) => x - y);
    const firstSecond = fireTime(first.key);
    const lastSecond = seconds[seconds.length - 1];
    const unfired: string[] = [];
    for (let second = firstSecond; second <= lastSecond; second += 1000) {
      const key = `tick:${new Date(second).toISOString()}`;
      if (byKey.has(key)) continue;
      // Fired somewhere (an instance skipped it for another) yet never run: that would be a lost firing.
      expect({ key, skippedButNeverRun: skipped.has(key) }).toEqual({ key, skippedButNeverRun: false });
      unfired.push(key);
    }
    expect(unfired.length).toBeLessThanOrEqual(UNFIRED_SECONDS_ALLOWED);
    expect(byKey.size).toBeGreaterThanOrEqual(8);

    // The firing after the crash ran, once, on a survivor.
    const after = runs.filter((run) => fireTime(run.key) > fireTime(victim.key));
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((run) => run.pid !== victim.pid)).toBe(true);

    // Fencing tokens rise from firing to firing.
    const tokens = [...runs].sort((x, y) => fireTime(x.key) - fireTime(y.key)).map((run) => BigInt(run.fencingToken));
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);

    // Where a lock nobody renews expires on the server alone (Redis), a graceful shutdown left the last firing's
    // lock there (lockAtLeastFor) rather than releasing it early. etcd keys live on a session lease that the
    // shutdown revokes, as ZooKeeper nodes live on their session: there the shutdown releases it.
    const { backend, close } = connectBackend(kind, address());
    const locks = new LockService(backend, { keyPrefix });
    try {
      const last = runs.reduce((latest, run) => (fireTime(run.key) > fireTime(latest.key) ? run : latest));
      expect(await locks.isLocked(last.key)).toBe(backend.supports?.expiry === true);
    } finally {
      await locks.close();
      await close();
    }
    console.log(
      `${kind}: ${byKey.size} firings run once each, ${unfired.length} not fired by any instance, ${skipped.size} skipped by others`,
    );
  }, 60_000);
});
