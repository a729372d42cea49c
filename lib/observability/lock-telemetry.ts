import type { LockService } from '../lock.service';
import { attachLockMetrics, type LockMetricsOptions } from './lock-metrics';
import { attachLockTracing, type LockTracingOptions } from './lock-tracing';

export interface LockTelemetryOptions extends LockMetricsOptions, LockTracingOptions {
  /** Record metrics. Default true. */
  metrics?: boolean;
  /** Trace acquisitions. Default true. */
  traces?: boolean;
}

/**
 * OpenTelemetry metrics and acquire spans for one LockService, through `@opentelemetry/api` only: the app's SDK
 * decides where they go, and without an SDK they cost next to nothing. Returns a function that stops both.
 *
 * ```ts
 * const detach = attachLockTelemetry(locks);               // global providers
 * attachLockTelemetry(locks, { meterProvider, tracerProvider });
 * ```
 */
export function attachLockTelemetry(locks: LockService, options: LockTelemetryOptions = {}): () => void {
  const detachers: (() => void)[] = [];
  if (options.metrics ?? true) detachers.push(attachLockMetrics(locks, options));
  if (options.traces ?? true) detachers.push(attachLockTracing(locks, options));
  return () => detachers.forEach((detach) => detach());
}
