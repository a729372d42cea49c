import type * as TerminusModule from '@nestjs/terminus';
import { loadOptionalPackage } from '../utils/optional-package';

export type Terminus = typeof TerminusModule;

/** `@nestjs/terminus`, loaded when a health check first runs: importing this library never requires it. */
export function loadTerminus(): Terminus {
  return loadOptionalPackage<Terminus>('@nestjs/terminus', 'LockHealthIndicator');
}
