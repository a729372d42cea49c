import { SCHEDULED_LOCK_METADATA } from '../distributed-lock.constants';
import { LockModuleMissingError, ScheduledLockConfigError } from '../errors';
import { parseKeyTemplate } from '../key-template/parse-key-template';
import { MAX_TTL } from '../lock-options';
import { type BoundedLockOptions, GRANT_WITHIN_MAX_HOLD, resolveLockOptions, validateLockKey } from '../utils/validate';
import { scheduledJobOf } from './scheduled-job';
import type { ScheduledLockMetadata } from './scheduled-lock-metadata';
import type { ScheduledLockOptions } from './scheduled-lock-options';

const KNOWN_OPTIONS: ReadonlySet<string> = new Set<keyof ScheduledLockOptions>([
  'lockAtMostFor',
  'lockAtLeastFor',
  'ttl',
  'renewInterval',
  'family',
]);
const REQUEST_SOURCES: ReadonlySet<string> = new Set(['params', 'query', 'body', 'headers', 'user']);

/**
 * Runs each firing of a `@Cron`, `@Interval` or `@Timeout` provider method on exactly one instance: the one that
 * gets the firing's lock, `<name>:<scheduled fire time>`. The others skip that firing at once (a debug log line).
 * The job reads its lock (fencing token, signal) with `LockService.current()`. Order against `@Cron` does not matter.
 *
 * The method is replaced here, on the class, rather than on the instance at startup: @nestjs/schedule takes its
 * reference to the method when its own module initialises, which may come before ours.
 */
export function ScheduledLock(name: string, options: ScheduledLockOptions = {}): MethodDecorator {
  const metadata = compileScheduledLock(name, options);
  return (target, methodName, descriptor) => {
    const where = `${(target as { constructor?: { name?: string } }).constructor?.name ?? 'a class'}.${String(methodName)}`;
    const original: unknown = descriptor?.value;
    if (typeof original !== 'function')
      throw new ScheduledLockConfigError(where, 'it goes on a method (with @Cron, @Interval or @Timeout).');
    if (typeof target === 'function') {
      throw new ScheduledLockConfigError(
        where,
        'it goes on an instance method of a provider; @nestjs/schedule does not run static methods.',
      );
    }
    const scheduled = function (this: object, ...args: unknown[]): Promise<unknown> {
      const job = scheduledJobOf(this, methodName);
      if (!job) return Promise.reject(new LockModuleMissingError(where, undefined, '@ScheduledLock'));
      return job.fire(() => original.apply(this, args));
    };
    Object.defineProperty(scheduled, 'name', { value: original.name });
    // @Cron may have been applied first (written below): its metadata moves to the replacement. Applied later, it lands there.
    for (const key of Reflect.getMetadataKeys(original))
      Reflect.defineMetadata(key, Reflect.getMetadata(key, original), scheduled);
    Reflect.defineMetadata(SCHEDULED_LOCK_METADATA, metadata, scheduled);
    return { ...descriptor, value: scheduled as typeof descriptor.value };
  };
}

/** The `@ScheduledLock` metadata of a method, if it has any. */
export function scheduledLockOf(method: unknown): ScheduledLockMetadata | undefined {
  return typeof method === 'function'
    ? (Reflect.getMetadata(SCHEDULED_LOCK_METADATA, method) as ScheduledLockMetadata | undefined)
    : undefined;
}

function compileScheduledLock(name: string, options: ScheduledLockOptions): ScheduledLockMetadata {
  const where = typeof name === 'string' ? `"${name}"` : String(name);
  checkName(name, where);
  if (options === null || typeof options !== 'object') {
    throw new ScheduledLockConfigError(
      where,
      `options must be an object such as { lockAtMostFor: 600000 }, got ${String(options)}.`,
    );
  }
  for (const key of Object.keys(options)) {
    if (KNOWN_OPTIONS.has(key)) continue;
    const hint =
      key === 'waitTimeout' ? ' A firing never waits: the instance that does not get the lock skips it.' : '';
    throw new ScheduledLockConfigError(where, `unknown option "${key}"; use ${[...KNOWN_OPTIONS].join(', ')}.${hint}`);
  }
  const { lockAtMostFor, lockAtLeastFor = 0, ttl, renewInterval, family = name } = options;
  if (typeof lockAtLeastFor !== 'number' || !(lockAtLeastFor >= 0) || lockAtLeastFor > MAX_TTL) {
    throw new ScheduledLockConfigError(
      where,
      `invalid lockAtLeastFor ${String(lockAtLeastFor)}: use milliseconds from 0 to ${MAX_TTL}.`,
    );
  }
  if (lockAtMostFor !== undefined && (typeof lockAtMostFor !== 'number' || !(lockAtMostFor > 0))) {
    throw new ScheduledLockConfigError(
      where,
      `invalid lockAtMostFor ${String(lockAtMostFor)}: use a positive number of milliseconds (how long a firing may hold its lock), or leave it out.`,
    );
  }
  if (lockAtMostFor !== undefined && lockAtLeastFor > lockAtMostFor) {
    throw new ScheduledLockConfigError(
      where,
      `lockAtLeastFor (${lockAtLeastFor} ms) is greater than lockAtMostFor (${lockAtMostFor} ms). ` +
        `lockAtMostFor bounds how long a firing may hold its lock; raise it, or lower lockAtLeastFor.`,
    );
  }
  const lockOptions: BoundedLockOptions = Object.freeze({
    ttl,
    renewInterval,
    maxHold: lockAtMostFor,
    family,
    // lockAtMostFor bounds the firing's lock itself, not only its renewals.
    [GRANT_WITHIN_MAX_HOLD]: true as const,
  });
  try {
    resolveLockOptions(lockOptions, undefined);
  } catch (error) {
    throw new ScheduledLockConfigError(where, (error as Error).message.replace('maxHold', 'lockAtMostFor'));
  }
  return Object.freeze({ name, lockAtLeastFor, lockOptions });
}

/** A job has no arguments and no request, so its name is literal text. */
function checkName(name: unknown, where: string): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new ScheduledLockConfigError(
      where,
      "name the job, e.g. @ScheduledLock('reports:nightly'): every instance must use the same name.",
    );
  }
  let template;
  try {
    template = parseKeyTemplate(name);
    validateLockKey(name);
  } catch (error) {
    throw new ScheduledLockConfigError(where, (error as Error).message);
  }
  const placeholder = template.placeholders[0];
  if (!placeholder) return;
  const fromRequest = placeholder.path.length > 1 && REQUEST_SOURCES.has(placeholder.path[0]);
  throw new ScheduledLockConfigError(
    where,
    fromRequest
      ? `${placeholder.text} names a request value, but a scheduled job has no request. Write the job name literally, e.g. 'reports:nightly'.`
      : `${placeholder.text} is a placeholder, but @nestjs/schedule calls the job without arguments, so there is nothing to fill it with. ` +
          `Write the job name literally, e.g. 'reports:nightly'.`,
  );
}
