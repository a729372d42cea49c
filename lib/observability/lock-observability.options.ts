import type { LoggerService } from '@nestjs/common';
import type { LockTelemetryOptions } from './lock-telemetry';

/** The observability part of DistributedLockModule's options. */
export interface LockObservabilityOptions {
  /**
   * OpenTelemetry metrics and acquire spans (needs `@opentelemetry/api`). `true`: the global providers.
   * Default false: turning it on is the app's choice, as it decides where the data goes.
   */
  telemetry?: boolean | LockTelemetryOptions;
  /**
   * Lock lifecycle lines in the `DistributedLock` context: debug for grants and releases, warn for at-risk,
   * error for lost. A LoggerService routes them elsewhere. Default true.
   */
  logging?: boolean | LoggerService;
}
