import type { ModuleRef } from '@nestjs/core';
import type * as TerminusModule from '@nestjs/terminus';
import type { HealthIndicatorService } from '@nestjs/terminus';
import { loadOptionalPackage } from '../utils/optional-package';
import type { HealthResult } from './health-result';

export type Terminus = typeof TerminusModule;

/**
 * `@nestjs/terminus`, loaded when a health check first runs: importing this library never requires it.
 * `feature`: the indicator that needs it, for the error's message.
 */
export function loadTerminus(feature = 'LockHealthIndicator'): Terminus {
  return loadOptionalPackage<Terminus>('@nestjs/terminus', feature);
}

/** Builds up/down results the way the installed terminus major expects (11: HealthIndicatorService; 10: thrown error). */
export class TerminusResults {
  private indicators?: HealthIndicatorService;

  constructor(
    private readonly moduleRef?: ModuleRef,
    private readonly feature = 'LockHealthIndicator',
  ) {}

  up<Key extends string, Details extends Record<string, unknown>>(
    key: Key,
    details: Details,
  ): HealthResult<Key, Details> {
    const terminus = loadTerminus(this.feature);
    const indicators = this.indicatorService(terminus);
    const data: Record<string, unknown> = details;
    if (indicators) return indicators.check(key).up(data) as HealthResult<Key, Details>;
    return { [key]: { status: 'up', ...details } } as HealthResult<Key, Details>;
  }

  down<Key extends string, Details extends Record<string, unknown>>(
    key: Key,
    details: Details,
  ): HealthResult<Key, Details> {
    const terminus = loadTerminus(this.feature);
    const indicators = this.indicatorService(terminus);
    const data: Record<string, unknown> = details;
    if (indicators) return indicators.check(key).down(data) as HealthResult<Key, Details>;
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
