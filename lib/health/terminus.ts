import type * as TerminusModule from '@nestjs/terminus';
import { requireOptional } from '../observability/missing-package.error';

export type Terminus = typeof TerminusModule;

/** `@nestjs/terminus`, loaded when a health check first runs: importing this library never requires it. */
export function loadTerminus(): Terminus {
  return requireOptional<Terminus>('@nestjs/terminus', 'LockHealthIndicator');
}
