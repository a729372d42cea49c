import { Injectable, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { HealthIndicatorService } from '@nestjs/terminus';
import { LockService } from '../lock.service';
import { describeError } from '../observability/redact';
import { monotonicNow } from '../utils/clock';
import { withDeadline } from '../utils/deadline';
import { loadTerminus, type Terminus } from './terminus';

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

/**
 * terminus' `HealthIndicatorResult<Key, 'up' | 'down', LockHealthDetails>`, spelled out so that our type
 * declarations need no @nestjs/terminus in an app without health checks. terminus accepts it as its own.
 */
export type LockHealthResult<Key extends string = 'lock'> = Record<Key, { status: 'up' | 'down' } & LockHealthDetails>;

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
  private indicators?: HealthIndicatorService;

  constructor(
    private readonly locks: LockService,
    @Optional() private readonly moduleRef?: ModuleRef,
  ) {}

  async isHealthy<const Key extends string = 'lock'>(
    key: Key = 'lock' as Key,
    options: LockHealthCheckOptions = {},
  ): Promise<LockHealthResult<Key>> {
    const terminus = loadTerminus();
    const timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
    const base = { backend: this.locks.backend.kind, address: this.locks.backend.address };
    const started = monotonicNow();
    const latencyMs = () => Math.round((monotonicNow() - started) * 10) / 10;
    try {
      await withDeadline(this.locks.isLocked(HEALTH_PROBE_KEY), timeout, () => new Error(`no reply within ${timeout} ms`));
    } catch (error) {
      return this.down(terminus, key, { ...base, latencyMs: latencyMs(), message: describeError(error) });
    }
    return this.up(terminus, key, { ...base, latencyMs: latencyMs() });
  }

  private up<Key extends string>(terminus: Terminus, key: Key, details: LockHealthDetails): LockHealthResult<Key> {
    const indicators = this.indicatorService(terminus);
    if (indicators) return indicators.check(key).up(details) as LockHealthResult<Key>;
    return { [key]: { status: 'up', ...details } } as LockHealthResult<Key>;
  }

  private down<Key extends string>(terminus: Terminus, key: Key, details: LockHealthDetails): LockHealthResult<Key> {
    const indicators = this.indicatorService(terminus);
    if (indicators) return indicators.check(key).down(details) as LockHealthResult<Key>;
    // Terminus 10 has no HealthIndicatorService: a down result is thrown as a HealthCheckError there.
    throw new terminus.HealthCheckError(`${key} is down`, { [key]: { status: 'down', ...details } });
  }

  /**
   * Terminus 11's HealthIndicatorService: the app's instance when TerminusModule is loaded, else our own (it is
   * stateless). Undefined on terminus 10.
   */
  private indicatorService(terminus: Terminus): HealthIndicatorService | undefined {
    const Service = terminus.HealthIndicatorService as typeof terminus.HealthIndicatorService | undefined;
    if (!Service) return undefined;
    if (!this.indicators) {
      try {
        this.indicators = this.moduleRef?.get(Service, { strict: false });
      } catch {
        // TerminusModule is not imported anywhere: the helper needs no dependencies, build it here.
      }
      this.indicators ??= new Service();
    }
    return this.indicators;
  }
}
