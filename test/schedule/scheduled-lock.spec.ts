import { Injectable, Module, Scope } from '@nestjs/common';
import { Cron, Interval, ScheduleModule, SchedulerRegistry, Timeout } from '@nestjs/schedule';
import { Test, TestingModule } from '@nestjs/testing';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { DistributedLockModule } from '../../lib/distributed-lock.module';
import { LockLostError, LockModuleMissingError, ScheduledLockConfigError } from '../../lib/errors';
import { LockService } from '../../lib/lock.service';
import { ScheduledLock } from '../../lib/schedule/scheduled-lock.decorator';
import { WithLock } from '../../lib/decorators/with-lock.decorator';
import { Gates } from '../nest/support/gates';
import { sleep } from '../support/time';

interface Run {
  instance: string;
  key: string;
  fencingToken: bigint;
}

/** Shared by the "instances" (Nest apps) of one test, as a database would be. */
class Runs {
  readonly list: Run[] = [];
}

@Injectable()
class Jobs {
  static readonly gates = new Gates();
  constructor(
    private readonly locks: LockService,
    private readonly runs: Runs,
    private readonly instance: { id: string },
  ) {}

  private record(): void {
    const lock = this.locks.current()!;
    this.runs.list.push({ instance: this.instance.id, key: lock.key, fencingToken: lock.fencingToken });
  }

  // Decorator order one way...
  @ScheduledLock('every-second')
  @Cron('* * * * * *', { name: 'every-second', disabled: true })
  async everySecond(gate?: string): Promise<void> {
    this.record();
    if (gate) await Jobs.gates.pass(gate);
  }

  // ...and the other.
  @Interval('hourly-interval', 3_600_000)
  @ScheduledLock('hourly')
  async hourly(): Promise<void> {
    this.record();
  }

  @Timeout('warm-up', 3_600_000)
  @ScheduledLock('warm-up', { lockAtLeastFor: 400, lockAtMostFor: 10_000 })
  async warmUp(): Promise<void> {
    this.record();
  }

  /** A hung job under the module's default ttl (30 s): lockAtMostFor, not the ttl, must end it. */
  @Timeout('hung', 3_600_000)
  @ScheduledLock('hung', { lockAtMostFor: 300 })
  async hangs(): Promise<void> {
    const { signal } = this.locks.current()!;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 60_000);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
  }

  @Timeout('lost', 3_600_000)
  @ScheduledLock('lost', { ttl: 300, lockAtMostFor: 300 })
  async losesItsLock(): Promise<void> {
    this.record();
    await sleep(1_500);
  }
}

const INSTANCE = 'INSTANCE';

async function startInstance(
  id: string,
  backend: MemoryLockBackend,
  runs: Runs,
): Promise<{ app: TestingModule; jobs: Jobs; locks: LockService }> {
  const app = await Test.createTestingModule({
    imports: [ScheduleModule.forRoot({ intervals: false, timeouts: false }), DistributedLockModule.forRoot(backend)],
    providers: [
      { provide: Runs, useValue: runs },
      { provide: INSTANCE, useValue: { id } },
      {
        provide: Jobs,
        useFactory: (locks: LockService, r: Runs, instance: { id: string }) => new Jobs(locks, r, instance),
        inject: [LockService, Runs, INSTANCE],
      },
    ],
  }).compile();
  await app.init();
  return { app, jobs: app.get(Jobs), locks: app.get(LockService) };
}

/** Resolves early in a second, so that two calls made now fall in the same one. */
async function startOfSecond(): Promise<void> {
  const into = Date.now() % 1000;
  if (into > 600) await sleep(1000 - into + 20);
}

const secondKey = (name: string, at: number) => `${name}:${new Date(Math.floor(at / 1000) * 1000).toISOString()}`;

describe('@ScheduledLock on the memory backend', () => {
  let backend: MemoryLockBackend;
  let runs: Runs;
  let a: Awaited<ReturnType<typeof startInstance>>;
  let b: Awaited<ReturnType<typeof startInstance>>;

  beforeEach(async () => {
    backend = new MemoryLockBackend();
    runs = new Runs();
    a = await startInstance('a', backend, runs);
    b = await startInstance('b', backend, runs);
  });

  afterEach(async () => {
    Jobs.gates.openAll();
    await a.app.close();
    await b.app.close();
    await backend.close();
  });

  it('runs a cron firing once across instances, keyed <job>:<scheduled fire time>; the other instance skips it', async () => {
    await startOfSecond();
    const before = Date.now();
    const results = await Promise.all([a.jobs.everySecond(), b.jobs.everySecond()]);
    expect(results).toEqual([undefined, undefined]);
    expect(runs.list).toHaveLength(1);
    expect(runs.list[0].key).toBe(secondKey('every-second', before));
    // Still inside that second: the firing's lock is kept until its slot ends, so a late instance skips it too.
    await a.jobs.everySecond();
    expect(runs.list).toHaveLength(1);
  });

  it('does not let a slow firing block the next one, and fencing tokens rise per firing', async () => {
    await startOfSecond();
    const first = a.jobs.everySecond('slow');
    await Jobs.gates.entered('slow');
    // The next scheduled second: a different key, so it runs while the first firing still holds its lock.
    await sleep(1000 - (Date.now() % 1000) + 20);
    await b.jobs.everySecond();
    expect(runs.list.map((run) => run.instance)).toEqual(['a', 'b']);
    expect(runs.list[0].key).not.toBe(runs.list[1].key);
    Jobs.gates.open('slow');
    await first;
    expect(a.locks.heldCount).toBe(0);
  });

  it('keys an @Interval firing by its window aligned to the epoch', async () => {
    const before = Date.now();
    await a.jobs.hourly();
    const window = Math.floor(before / 3_600_000) * 3_600_000;
    expect(runs.list[0].key).toBe(`hourly:${new Date(window).toISOString()}`);
    await b.jobs.hourly();
    expect(runs.list).toHaveLength(1);
  });

  it('keeps the lock for lockAtLeastFor after a short job, on the server only', async () => {
    await a.jobs.warmUp();
    expect(runs.list).toHaveLength(1);
    // Nothing held in the process: the lock was left on the server to expire.
    expect(a.locks.heldCount).toBe(0);
    expect(await b.locks.isLocked('warm-up')).toBe(true);
    await b.jobs.warmUp();
    expect(runs.list).toHaveLength(1);
    // So shutdown (LockService.close() releases what it holds) cannot free the firing early: see scheduled-lock.processes.spec.ts.
    await sleep(450);
    expect(await b.locks.isLocked('warm-up')).toBe(false);
    await b.jobs.warmUp();
    expect(runs.list.map((run) => run.instance)).toEqual(['a', 'b']);
    expect(runs.list[1].fencingToken).toBeGreaterThan(runs.list[0].fencingToken);
  });

  it('rejects with LockLostError when lockAtMostFor passes while the job runs', async () => {
    await expect(a.jobs.losesItsLock()).rejects.toBeInstanceOf(LockLostError);
  });

  it('ends a hung job about lockAtMostFor after the grant, however long the ttl, and frees its key', async () => {
    const startedAt = performance.now();
    await expect(a.jobs.hangs()).rejects.toThrow(/maxHold=300 ms/);
    // Far below the module's 30 s ttl, which bounded it before; generous for a loaded machine.
    expect(performance.now() - startedAt).toBeLessThan(10_000);
    expect(await a.locks.isLocked('hung')).toBe(false);
  });

  it('leaves the jobs registered with @nestjs/schedule whatever the decorator order', () => {
    const registry = a.app.get(SchedulerRegistry);
    expect(registry.getCronJob('every-second')).toBeDefined();
  });
});

describe('@ScheduledLock input checks', () => {
  it('refuses lockAtLeastFor greater than lockAtMostFor when decorated', () => {
    expect(() => ScheduledLock('job', { lockAtLeastFor: 5_000, lockAtMostFor: 1_000 })).toThrow(
      new ScheduledLockConfigError(
        '"job"',
        'lockAtLeastFor (5000 ms) is greater than lockAtMostFor (1000 ms). lockAtMostFor bounds how long a firing may hold its lock; raise it, or lower lockAtLeastFor.',
      ),
    );
  });

  it.each([
    'report:<<params.id>>',
    'report:<<query.day>>',
    'report:<<body.id>>',
    'report:<<headers.x-tenant>>',
    'report:<<user.id>>',
  ])('refuses a job key that names a request value: %s', (name) => {
    expect(() => ScheduledLock(name)).toThrow(/names a request value, but a scheduled job has no request/);
  });

  it('refuses other placeholders, waitTimeout, typos and an empty name', () => {
    expect(() => ScheduledLock('report:<<id>>')).toThrow(/calls the job without arguments/);
    expect(() => ScheduledLock('job', { waitTimeout: 0 } as never)).toThrow(/A firing never waits/);
    expect(() => ScheduledLock('job', { lockAtMostfor: 1 } as never)).toThrow(/unknown option "lockAtMostfor"/);
    expect(() => ScheduledLock('')).toThrow(ScheduledLockConfigError);
    // Found from outside: a negative lockAtMostFor was reported as "lockAtLeastFor (0 ms) is greater than" it.
    expect(() => ScheduledLock('job', { lockAtMostFor: -5 })).toThrow(/invalid lockAtMostFor -5: use a positive/);
    expect(() => ScheduledLock('job', { lockAtMostFor: 0 })).toThrow(/invalid lockAtMostFor 0/);
  });

  it('fails at startup for a job on a request-scoped provider', async () => {
    @Injectable({ scope: Scope.REQUEST })
    class PerRequest {
      @Cron('* * * * * *')
      @ScheduledLock('per-request')
      async run(): Promise<void> {}
    }
    const app = await Test.createTestingModule({
      imports: [ScheduleModule.forRoot(), DistributedLockModule.forRoot()],
      providers: [PerRequest],
    }).compile();
    const failure = await app.init().then(
      () => undefined,
      (error: unknown) => error,
    );
    await app.close().catch(() => undefined);
    expect(failure).toBeInstanceOf(ScheduledLockConfigError);
    expect((failure as Error).message).toMatch(/PerRequest is request-scoped.*Move the job to a singleton provider/);
  });

  it('fails at startup for a method without @Cron, @Interval or @Timeout', async () => {
    @Injectable()
    class Unscheduled {
      @ScheduledLock('unscheduled')
      async run(): Promise<void> {}
    }
    const app = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot()],
      providers: [Unscheduled],
    }).compile();
    await expect(app.init()).rejects.toThrow(/Unscheduled.run: the method has no @Cron, @Interval or @Timeout/);
    await app.close().catch(() => undefined);
  });

  it('fails at startup for @WithLock on a @Cron method, which the scheduler would call unlocked', async () => {
    @Injectable()
    class CronWithLock {
      @Cron('* * * * * *')
      @WithLock('report')
      async run(): Promise<void> {}
    }
    const app = await Test.createTestingModule({
      imports: [ScheduleModule.forRoot(), DistributedLockModule.forRoot()],
      providers: [CronWithLock],
    }).compile();
    await expect(app.init()).rejects.toThrow(/CronWithLock.run: use it here instead of @WithLock/);
    await app.close().catch(() => undefined);
  });

  it('rejects each firing with LockModuleMissingError when DistributedLockModule is not imported', async () => {
    @Injectable()
    class Orphan {
      @Cron('* * * * * *', { disabled: true })
      @ScheduledLock('orphan')
      async run(): Promise<void> {}
    }
    @Module({ providers: [Orphan] })
    class OrphanModule {}
    const app = await Test.createTestingModule({ imports: [OrphanModule] }).compile();
    await app.init();
    await expect(app.get(Orphan).run()).rejects.toBeInstanceOf(LockModuleMissingError);
    await app.close();
  });

  it('reports a missing @nestjs/schedule as MissingPackageError naming the install command', () => {
    jest.isolateModules(() => {
      jest.doMock('@nestjs/schedule', () => {
        throw Object.assign(new Error("Cannot find module '@nestjs/schedule'"), { code: 'MODULE_NOT_FOUND' });
      });
      const { jobTimingOf } =
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        require('../../lib/schedule/job-timing') as typeof import('../../lib/schedule/job-timing');
      expect(() => jobTimingOf(() => undefined, 'job', 'Jobs.run')).toThrow(
        expect.objectContaining({
          name: 'MissingPackageError',
          message:
            '@ScheduledLock on Jobs.run needs the "@nestjs/schedule" package, which is not installed. Run: npm install @nestjs/schedule',
        }),
      );
    });
  });
});
