import { Injectable, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { backendErrorOf } from '../errors/lock-backend.error';
import { LockService } from '../lock.service';
import { describeError } from '../utils/redact';
import { monotonicNow } from '../utils/clock';
import { withDeadline } from '../utils/deadline';
import type { HealthResult } from './health-result';
import { loadTerminus, TerminusResults } from './terminus';

/** The key the probe asks about. Only read (isLocked), never locked. */
export const HEALTH_PROBE_KEY = '__health__';
/** Like terminus' own ping checks: a health endpoint must answer fast even when the backend does not. */
const DEFAULT_TIMEOUT_MS = 1_000;

export interface LockHealthCheckOptions {
  /** ms the backend has to answer before the check reports down. Default 1 000. */
  timeout?: number;
}

/** What the indicator reports besides `status`. A type, not an interface: terminus wants a plain record. */
export type LockHealthDetails = {
  /** 'redis', 'etcd', 'memory'. */
  backend: string;
  /** Where the backend points, never with credentials. */
  address: string;
  /** Round trip of the probe in ms (until the deadline when it did not answer). */
  latencyMs: number;
  /** Why it is down. */
  message?: string;
};

export type LockHealthResult<Key extends string = 'lock'> = HealthResult<Key, LockHealthDetails>;

/**
 * A `@nestjs/terminus` health indicator for the lock backend: one cheap read (`isLocked('__health__')`) with a
 * deadline, reported with its latency. Down when the server cannot be reached or answers too slowly.
 *
 * ```ts
 * @Get('health') @HealthCheck()
 * check() { return this.health.check([() => this.lock.isHealthy('lock')]); }
 * ```
 */
@Injectable()
export class LockHealthIndicator {
  private readonly results: TerminusResults;

  constructor(
    private readonly locks: LockService,
    @Optional() moduleRef?: ModuleRef,
  ) {
    this.results = new TerminusResults(moduleRef);
  }

  async isHealthy<const Key extends string = 'lock'>(
    key: Key = 'lock' as Key,
    options: LockHealthCheckOptions = {},
  ): Promise<LockHealthResult<Key>> {
    loadTerminus();
    const timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
    const base = { backend: this.locks.backend.kind, address: this.locks.backend.address };
    const started = monotonicNow();
    const latencyMs = () => Math.round((monotonicNow() - started) * 10) / 10;
    try {
      await withDeadline(this.locks.isLocked(HEALTH_PROBE_KEY), timeout, () =>
        backendErrorOf(this.locks.backend, 'health check', `no reply within ${timeout} ms`),
      );
    } catch (error) {
      return this.results.down(key, { ...base, latencyMs: latencyMs(), message: describeError(error) });
    }
    return this.results.up(key, { ...base, latencyMs: latencyMs() });
  }
}
