import { filter, firstValueFrom, Observable, toArray, take } from 'rxjs';
import type { LockBackend } from '../../lib/backends/lock-backend.interface';
import { LockBackendError, LockLostError, LockNotSupportedError } from '../../lib/errors';
import { LeaderElection } from '../../lib/leader-election/leader-election.service';
import type { LeaderInfo } from '../../lib/leader-election/election-backend.interface';
import type { Leadership, LeadershipEvent } from '../../lib/leader-election/leadership';
import { LockService } from '../../lib/lock.service';
import { freeTestPort } from '../support/free-port';
import { since } from '../support/time';

/** One app instance: a LockService and a LeaderElection on its own backend connection. */
export interface ElectionInstance {
  readonly elections: LeaderElection;
  readonly backend: LockBackend;
  close(): Promise<void>;
}

export interface ElectionWorld {
  /** A new instance on a new connection to the same elections. */
  instance(): Promise<ElectionInstance>;
  /** ttl for campaigns: etcd leases are whole seconds. */
  readonly ttl: number;
  /** False where proclaim() is refused (ZooKeeper: Curator's LeaderLatch followers cannot follow a data change). */
  readonly proclaims: boolean;
  close(): Promise<void>;
}

let names = 0;
/** A fresh election name per test, so tests never see each other's contenders. */
export function uniqueName(label: string): string {
  return `${label}-${process.pid}-${Date.now().toString(36)}-${++names}`;
}

export function instanceOn(
  backend: LockBackend,
  ttl: number,
  closeClient: () => Promise<void> | void = () => undefined,
): ElectionInstance {
  const locks = new LockService(backend);
  const elections = new LeaderElection(locks, { ttl });
  return {
    elections,
    backend,
    close: async () => {
      await elections.close();
      await locks.close();
      await closeClient();
    },
  };
}

/** Tracks whether a promise settled, without awaiting it. */
export function track<T>(promise: Promise<T>): { promise: Promise<T>; settled(): boolean } {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  return { promise, settled: () => settled };
}

/** The first leader the observable reports that matches. */
export function leaderWhere(
  leaders: Observable<LeaderInfo | null>,
  test: (leader: LeaderInfo | null) => boolean,
): Promise<LeaderInfo | null> {
  return firstValueFrom(leaders.pipe(filter(test)));
}

/** The next `count` renewals of a leadership (its events$ errors if the leadership is lost first). */
export function renewals(leadership: Leadership, count: number): Promise<LeadershipEvent[]> {
  return firstValueFrom(
    leadership.events$.pipe(
      filter((event) => event.type === 'renewed'),
      take(count),
      toArray(),
    ),
  );
}

const DEAD_OPERATION_TIMEOUT = 1_500;
/** Slack for a loaded machine; a hang would blow far past it. */
const DEAD_MARGIN = 4_000;

/**
 * With nothing listening on the backend's port, `leader()` rejects with a LockBackendError that names the
 * backend, its address, the call and why nothing answered, within the elections' operationTimeout.
 */
export function unreachableElectionCases(label: string, backendAt: (port: number) => LockBackend): void {
  describe(`leader election with nothing listening (${label})`, () => {
    it('leader() rejects with a LockBackendError naming the backend, address and connection, in bounded time', async () => {
      const port = await freeTestPort();
      const dead = { port, backend: backendAt(port) };
      const locks = new LockService(dead.backend);
      const elections = new LeaderElection(locks, { operationTimeout: DEAD_OPERATION_TIMEOUT });
      try {
        const started = performance.now();
        const error: unknown = await elections.leader(uniqueName('dead')).then(
          () => new Error('leader() answered against a dead port'),
          (rejection: unknown) => rejection,
        );
        expect(error).toBeInstanceOf(LockBackendError);
        const failure = error as LockBackendError;
        expect(failure.backend).toBe(dead.backend.kind);
        expect(failure.operation).toBe('election leader');
        expect(failure.message).toContain(String(dead.port));
        expect(failure.message).toMatch(/connect/i);
        expect(since(started)).toBeLessThan(DEAD_OPERATION_TIMEOUT + DEAD_MARGIN);
      } finally {
        await elections.close();
        await locks.close();
      }
    });

    it('observe() errors with a LockBackendError after its reads keep failing, rather than wait in silence', async () => {
      const port = await freeTestPort();
      const locks = new LockService(backendAt(port));
      const elections = new LeaderElection(locks, { operationTimeout: DEAD_OPERATION_TIMEOUT });
      try {
        const started = performance.now();
        const error: unknown = await firstValueFrom(elections.observe(uniqueName('dead-observe'))).then(
          () => new Error('observe() emitted against a dead port'),
          (rejection: unknown) => rejection,
        );
        expect(error).toBeInstanceOf(LockBackendError);
        expect((error as LockBackendError).message).toContain(String(port));
        // Ten failed reads with backoff (docs: about 8 s), each bounded.
        expect(since(started)).toBeLessThan(40_000);
      } finally {
        await elections.close();
        await locks.close();
      }
    }, 60_000);
  });
}

/** The behaviour every election backend shares. */
export function electionContract(label: string, setup: () => Promise<ElectionWorld>): void {
  describe(`leader election contract (${label})`, () => {
    let world: ElectionWorld;
    let a: ElectionInstance;
    let b: ElectionInstance;

    beforeAll(async () => {
      world = await setup();
    });
    afterAll(async () => {
      await world?.close();
    });
    beforeEach(async () => {
      a = await world.instance();
      b = await world.instance();
    });
    afterEach(async () => {
      await Promise.allSettled([a.close(), b.close()]);
    });

    /**
     * Follows `name` from instance b, each report as `describe` puts it, from its first report (the vacancy) on.
     * `expectStory` then waits for `story` and checks it: every change where the backend carries each one in its
     * events (etcd, Redis, memory); on ZooKeeper, whose one-shot watches fire before the observer reads the latch,
     * a change undone before that read is not seen (docs/leader-election.md), but what is reported is in order
     * and ends with `vacancy`.
     */
    async function observeFromVacancy<T>(name: string, describe: (leader: LeaderInfo | null) => T) {
      const seen: T[] = [];
      let started!: () => void;
      const first = new Promise<void>((resolve) => (started = resolve));
      const subscription = b.elections.observe(name).subscribe((leader) => {
        seen.push(describe(leader));
        started();
      });
      await first;
      return {
        async expectStory(story: readonly T[], vacancy: T): Promise<void> {
          await waitFor(
            () => seen.length >= story.length,
            world.proclaims ? 10_000 : 3_000, // ZooKeeper may never report some: wait less for it
            () => JSON.stringify(seen),
          ).catch(() => undefined);
          subscription.unsubscribe();
          if (world.proclaims) {
            expect(seen).toEqual(story);
          } else {
            expect(isSubsequence(seen, story)).toBe(true);
            expect(seen.at(-1)).toBe(vacancy);
          }
        },
      };
    }

    it('lets exactly one of two contenders lead; after a resign the other leads with a larger term', async () => {
      const name = uniqueName('one-leader');
      const first = await a.elections.campaign(name, { value: 'a' });
      const second = track(b.elections.campaign(name, { value: 'b' }));
      // B sees A as leader through the server, and is still waiting after that round trip.
      expect(await b.elections.leader(name)).toEqual({ value: 'a', term: first.term });
      if (world.proclaims) {
        await first.proclaim('a, still');
        expect(await b.elections.leader(name)).toEqual({ value: 'a, still', term: first.term });
      } else {
        await expect(first.proclaim('a, still')).rejects.toBeInstanceOf(LockNotSupportedError);
        expect(first.isLeader).toBe(true);
      }
      expect(second.settled()).toBe(false);
      expect(first.isLeader).toBe(true);
      expect(a.elections.isLeader(name)).toBe(true);
      expect(b.elections.isLeader(name)).toBe(false);

      await first.resign();
      expect(first.state).toBe('resigned');
      expect(first.signal.aborted).toBe(false);
      const next = await second.promise;
      expect(next.term).toBeGreaterThan(first.term);
      expect(await a.elections.leader(name)).toEqual({ value: 'b', term: next.term });
      expect(a.elections.isLeader(name)).toBe(false);
      await next.resign();
      expect(await a.elections.leader(name)).toBeNull();
    });

    it('reports leaders, proclaimed values and vacancy to observers', async () => {
      const name = uniqueName('observe');
      const seen: (LeaderInfo | null)[] = [];
      const subscription = b.elections.observe(name).subscribe((leader) => seen.push(leader));
      await leaderWhere(b.elections.observe(name), (leader) => leader === null);

      const leadership = await a.elections.campaign(name, { value: 'v1' });
      await leaderWhere(b.elections.observe(name), (leader) => leader?.value === 'v1');
      const values = world.proclaims ? [null, 'v1', 'v2', null] : [null, 'v1', null];
      if (world.proclaims) {
        await leadership.proclaim('v2');
        const updated = await leaderWhere(b.elections.observe(name), (leader) => leader?.value === 'v2');
        expect(updated).toEqual({ value: 'v2', term: leadership.term });
      }
      await leadership.resign();
      await leaderWhere(b.elections.observe(name), (leader) => leader === null);
      // The long-lived subscription saw the same story in order, without repeats.
      await waitFor(
        () => seen.at(-1) === null && seen.length >= values.length,
        10_000,
        () => JSON.stringify(seen, (_k, v) => (typeof v === 'bigint' ? String(v) : v)),
      );
      subscription.unsubscribe();
      expect(seen.map((leader) => leader?.value ?? null)).toEqual(values);
    });

    it('reports changes in order, even when campaign, proclaim and resign land before the observer reads', async () => {
      const story = world.proclaims ? [null, 'v1', 'v2', null] : [null, 'v1', null];
      for (let round = 0; round < 5; round++) {
        const name = uniqueName('back-to-back');
        const observer = await observeFromVacancy(name, (leader) => leader?.value ?? null);
        // No wait between the steps: the observer may get all the changes at once.
        const leadership = await a.elections.campaign(name, { value: 'v1' });
        if (world.proclaims) await leadership.proclaim('v2');
        await leadership.resign();
        await observer.expectStory(story, null);
      }
    });

    it('reports each leader with its own term when one instance campaigns again right after resigning', async () => {
      const name = uniqueName('again');
      const observer = await observeFromVacancy(name, (leader) =>
        leader ? `${leader.value}@${leader.term}` : 'vacant',
      );
      const story = ['vacant'];
      const terms = new Set<bigint>();
      // Found from outside (etcd): the same process's next key has the same name, and a batch with the deletion
      // and the new key reported the new leader with the old term.
      for (const value of ['v1', 'v2', 'v3']) {
        const leadership = await a.elections.campaign(name, { value });
        terms.add(leadership.term);
        story.push(`${value}@${leadership.term}`);
        if (world.proclaims) {
          await leadership.proclaim(`${value}b`);
          story.push(`${value}b@${leadership.term}`);
        }
        await leadership.resign();
        story.push('vacant');
      }
      expect(terms.size).toBe(3);
      await observer.expectStory(story, 'vacant');
    });

    it('completes events$ on resign and serialises the term as a decimal string', async () => {
      const name = uniqueName('json');
      const leadership = await a.elections.campaign(name, { value: 'json' });
      const events = firstValueFrom(leadership.events$.pipe(toArray()));
      const json = JSON.parse(JSON.stringify(leadership));
      expect(json).toMatchObject({ name, term: leadership.term.toString(), value: 'json', state: 'leading' });
      await leadership.resign();
      await leadership.resign();
      expect((await events).filter((event) => event.type !== 'renewed')).toEqual([]);
      await expect(leadership.proclaim('late')).rejects.toBeInstanceOf(LockLostError);
    });

    it('leaves the election when a campaign is aborted, so it never leads', async () => {
      const name = uniqueName('abort');
      const leadership = await a.elections.campaign(name, { value: 'a' });
      const controller = new AbortController();
      const waiting = b.elections.campaign(name, { value: 'b', signal: controller.signal });
      const reason = new Error('stop waiting');
      controller.abort(reason);
      await expect(waiting).rejects.toBe(reason);
      await leadership.resign();
      expect(await a.elections.leader(name)).toBeNull();
    });

    it('renews the leadership past its ttl', async () => {
      const name = uniqueName('renew');
      const leadership = await a.elections.campaign(name, { value: 'renewing' });
      expect(await renewals(leadership, 4)).toHaveLength(4);
      expect(leadership.isLeader).toBe(true);
      expect(await b.elections.leader(name)).toEqual({ value: 'renewing', term: leadership.term });
      await leadership.resign();
    });

    it('resigns what it leads and rejects new campaigns once closed', async () => {
      const name = uniqueName('close');
      const leadership = await a.elections.campaign(name, { value: 'a' });
      const waiting = track(b.elections.campaign(name, { value: 'b' }));
      await a.elections.close();
      expect(leadership.state).toBe('resigned');
      const next = await waiting.promise;
      expect(next.term).toBeGreaterThan(leadership.term);
      await expect(a.elections.campaign(name)).rejects.toThrow(/closed/);
      await next.resign();
    });
  });
}

/** Polls a condition that an event already made true (the subscriber may run a tick later). */
export async function waitFor(
  condition: () => boolean,
  timeoutMs = 10_000,
  describe: () => string = () => '',
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error(`condition not met in time ${describe()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Whether `part` is `whole` with some entries left out, in the same order. */
function isSubsequence<T>(part: readonly T[], whole: readonly T[]): boolean {
  let index = 0;
  for (const entry of whole) if (index < part.length && part[index] === entry) index++;
  return index === part.length;
}
