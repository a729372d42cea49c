import { Logger } from '@nestjs/common';
import { raceAbort } from '../utils/abort';
import { currentLockScope, runInLockScope } from '../context/lock-context';
import { LOGGER_CONTEXT } from '../distributed-lock.constants';
import { LockServiceClosedError } from '../errors';
import { LEAVE_TO_EXPIRE, LockHandle } from '../lock-handle';
import type { LockService } from '../lock.service';
import { monotonicNow } from '../utils/clock';
import type { RunningCalls } from '../utils/running-calls';
import type { Firing, JobTiming } from './job-timing';
import type { ScheduledLockMetadata } from './scheduled-lock-metadata';

/** Jobs set up by the explorer, per provider instance and method. */
const jobs = new WeakMap<object, Map<string | symbol, ScheduledJob>>();

export function scheduledJobOf(instance: object, methodName: string | symbol): ScheduledJob | undefined {
  return jobs.get(instance)?.get(methodName);
}

export function registerScheduledJob(instance: object, methodName: string | symbol, job: ScheduledJob): void {
  let byMethod = jobs.get(instance);
  if (!byMethod) jobs.set(instance, (byMethod = new Map<string | symbol, ScheduledJob>()));
  byMethod.set(methodName, job);
}

const logger = new Logger(LOGGER_CONTEXT);

/** Runs the firings of one `@ScheduledLock` method: each on the instance that gets its lock, skipped elsewhere. */
export class ScheduledJob {
  constructor(
    private readonly locks: LockService,
    private readonly where: string,
    private readonly metadata: ScheduledLockMetadata,
    private readonly timing: JobTiming,
    private readonly running: RunningCalls,
  ) {}

  /** Resolves undefined when another instance runs this firing. Rejects with what the job threw, or LockLostError. */
  fire(work: () => unknown): Promise<unknown> {
    const firing = this.timing(Date.now());
    if (this.running.isClosing) {
      logger.debug(`${this.where}: firing "${firing.key}" skipped, the app is shutting down.`);
      return Promise.resolve(undefined);
    }
    return this.running.track(this.run(firing, work));
  }

  private run(firing: Firing, work: () => unknown): Promise<unknown> {
    return runInLockScope(async () => {
      let handle: LockHandle | null;
      try {
        handle = await this.locks.tryAcquire(firing.key, this.metadata.lockOptions);
      } catch (error) {
        // A firing that races app.close(): nothing ran, nothing to report.
        if (!(error instanceof LockServiceClosedError)) throw error;
        logger.debug(`${this.where}: firing "${firing.key}" skipped, the app is shutting down.`);
        return undefined;
      }
      if (!handle) {
        logger.debug(`${this.where}: firing "${firing.key}" runs on another instance; skipped here.`);
        return undefined;
      }
      const grantedAt = monotonicNow();
      const scope = currentLockScope()!;
      scope.hold(handle);
      scope.handlerLockSet = { handles: new Map([[handle.key, handle]]), namesSeveralKeys: false };
      const lost = handle.signal;
      try {
        return await raceAbort(Promise.resolve().then(work), lost, () => lost.reason);
      } finally {
        // Until the slot ends, a late instance computes this firing's key; lockAtLeastFor covers clock skew beyond that.
        const keepFor = Math.max(
          (firing.slotEnd ?? 0) - Date.now(),
          grantedAt + this.metadata.lockAtLeastFor - monotonicNow(),
        );
        await this.settle(handle, keepFor);
      }
    });
  }

  /** Releases the lock, or leaves it on the server for `keepFor` ms more, holding nothing in this process. */
  private async settle(handle: LockHandle, keepFor: number): Promise<void> {
    try {
      if (keepFor <= 0 || !handle.isHeld) return await handle.release();
      if (this.locks.backend.supports?.expiry) {
        await handle[LEAVE_TO_EXPIRE](keepFor);
        return;
      }
      // ZooKeeper and etcd: a node or key lives as long as its session, so keep renewing it and release later. Unref'd: this
      // must not keep the process alive, and LockService.close() releases it at shutdown.
      setTimeout(() => void handle.release().catch(() => undefined), keepFor).unref();
    } catch (error) {
      logger.warn(
        `${this.where}: could not release or shorten the lock of firing "${handle.key}"; it expires after its ttl. ` +
          (error instanceof Error ? error.message : String(error)),
      );
    }
  }
}
