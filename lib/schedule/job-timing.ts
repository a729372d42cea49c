import { createRequire } from 'node:module';
import { ScheduledLockConfigError } from '../errors';
import { loadOptionalPackage } from '../utils/optional-package';

/** One firing of a job: its lock key, and when its slot ends (the next scheduled time), if it has one. */
export interface Firing {
  readonly key: string;
  /** Epoch ms. Until then an instance that fires late would still compute this key. */
  readonly slotEnd: number | undefined;
}

/** The firing a job's call at `now` (epoch ms) belongs to. */
export type JobTiming = (now: number) => Firing;

// @nestjs/schedule's metadata keys and SchedulerType values. Its package root exports neither; they have kept
// these values since its first release, and test/schedule checks them against @Cron, @Interval and @Timeout.
const SCHEDULER_TYPE = 'SCHEDULER_TYPE';
const SCHEDULE_CRON_OPTIONS = 'SCHEDULE_CRON_OPTIONS';
const SCHEDULE_INTERVAL_OPTIONS = 'SCHEDULE_INTERVAL_OPTIONS';
const SchedulerType = { CRON: 1, TIMEOUT: 2, INTERVAL: 3 } as const;

/** Whether @Cron, @Interval or @Timeout is on the method. */
export function isScheduledJob(method: unknown): boolean {
  return typeof method === 'function' && Reflect.getMetadata(SCHEDULER_TYPE, method) !== undefined;
}

/** The part of cron we use, typed here so that no declaration of ours imports it. */
interface CronPackage {
  readonly CronTime: new (
    source: unknown,
    timeZone?: string | null,
    utcOffset?: number | null,
  ) => { getNextDateFrom(start: Date, timeZone?: string): { toMillis(): number } };
}
interface CronMetadata {
  readonly cronTime: unknown;
  readonly timeZone?: string;
  readonly utcOffset?: number;
}

/**
 * Reads the schedule @Cron, @Interval or @Timeout put on `method` and returns how a call maps to its firing:
 *  - @Cron: `<name>:<ISO time>` of the most recent scheduled time at or before the call (cron never fires early);
 *  - @Interval(ms): `<name>:<ISO time>` of the call's window aligned to the epoch, floor(now / ms) * ms;
 *  - @Timeout: `<name>` alone (it fires once per process).
 * Loads @nestjs/schedule only here, so an app that does not use @ScheduledLock never needs it.
 */
export function jobTimingOf(method: Function, name: string, where: string): JobTiming {
  loadOptionalPackage<unknown>('@nestjs/schedule', `@ScheduledLock on ${where}`);
  const type = Reflect.getMetadata(SCHEDULER_TYPE, method) as number | undefined;
  switch (type) {
    case SchedulerType.CRON:
      return cronTiming(name, Reflect.getMetadata(SCHEDULE_CRON_OPTIONS, method) as CronMetadata, where);
    case SchedulerType.INTERVAL:
      return intervalTiming(
        name,
        (Reflect.getMetadata(SCHEDULE_INTERVAL_OPTIONS, method) as { timeout: number }).timeout,
      );
    case SchedulerType.TIMEOUT:
      return () => ({ key: name, slotEnd: undefined });
    default:
      throw new ScheduledLockConfigError(
        where,
        'the method has no @Cron, @Interval or @Timeout, so there is no firing to lock. Add one, or lock inside the method with LockService.tryAcquire().',
      );
  }
}

export function intervalTiming(name: string, ms: number): JobTiming {
  return (now) => {
    const start = Math.floor(now / ms) * ms;
    return { key: `${name}:${new Date(start).toISOString()}`, slotEnd: start + ms };
  };
}

export function cronTiming(name: string, { cronTime, timeZone, utcOffset }: CronMetadata, where: string): JobTiming {
  if (typeof cronTime !== 'string') {
    // A Date or a luxon DateTime: the job fires once, at that time.
    const at = cronTime instanceof Date ? cronTime.getTime() : (cronTime as { toMillis?: () => number })?.toMillis?.();
    if (typeof at !== 'number' || Number.isNaN(at))
      throw new ScheduledLockConfigError(where, `cannot read the time of @Cron(${String(cronTime)}).`);
    return () => ({ key: `${name}:${new Date(at).toISOString()}`, slotEnd: undefined });
  }
  // cron is @nestjs/schedule's dependency, not ours: resolve it from there (strict installs such as pnpm's).
  const { CronTime } = createRequire(require.resolve('@nestjs/schedule'))('cron') as CronPackage;
  const time = new CronTime(cronTime, timeZone ?? null, timeZone === undefined ? (utcOffset ?? null) : null);
  const zone = timeZone ?? (utcOffset === undefined ? undefined : offsetZone(utcOffset));
  const next = (after: number) => time.getNextDateFrom(new Date(after), zone).toMillis();
  return (now) => {
    const fire = latestAtOrBefore(next, now);
    return { key: `${name}:${new Date(fire).toISOString()}`, slotEnd: next(fire) };
  };
}

/** A year and a bit: a cron expression fires at least once a year unless it names a day that rarely exists. */
const LONGEST_LOOKBACK = 400 * 24 * 3600 * 1000;

/**
 * The latest scheduled time <= now, given `next(t)`, the first scheduled time after t. Looks back twice as far
 * each round until a scheduled time is found, then walks forward to the last one not after `now`.
 */
export function latestAtOrBefore(next: (after: number) => number, now: number): number {
  for (let lookback = 1000; ; lookback *= 2) {
    let fire = next(now - lookback);
    if (fire <= now) {
      for (let following = next(fire); following <= now; following = next(fire)) fire = following;
      return fire;
    }
    // Nothing scheduled in the window: the call was not a scheduled firing (a direct call); use the next one's key.
    if (lookback > LONGEST_LOOKBACK) return fire;
  }
}

/** cron's own notation for a fixed offset in minutes, as its sendAt() builds it. */
function offsetZone(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const hours = Math.trunc(Math.abs(minutes) / 60);
  const rest = Math.abs(minutes) - hours * 60;
  return `UTC${sign}${String(hours).padStart(2, '0')}:${String(rest).padStart(2, '0')}`;
}
