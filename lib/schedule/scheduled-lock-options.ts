/** Options of `@ScheduledLock(name, options)`. Durations in milliseconds. */
export interface ScheduledLockOptions {
  /**
   * Longest time a firing holds its lock while the job runs: the watchdog renews it until then, then lets it
   * expire, and the job's LockService.current() handle reports it lost (its `signal` aborts). Bounds a hung job.
   * It is the lock's `maxHold`. Default: the module's `defaults.maxHold` (no limit).
   */
  lockAtMostFor?: number;
  /**
   * Shortest time a firing keeps its lock, counted from its grant, when the job ends sooner. Instances whose
   * clocks are behind (or that fire late) by less than this skip the firing instead of running it again.
   * The lock is kept at least until the firing's slot ends anyway (the next scheduled time). Default 0.
   */
  lockAtLeastFor?: number;
  /** Validity of the lock while the job runs; the watchdog renews it. Default: the module's ttl (30 000). */
  ttl?: number;
  /** Watchdog period while the job runs. Default ttl / 3. */
  renewInterval?: number;
  /** Metrics and events label. Default: the job name. */
  family?: string;
}
