/**
 * Names of what the library records, in one place so the README, dashboards and tests agree.
 * They follow OpenTelemetry's naming habits: a `distributed_lock.` namespace, durations in seconds, counts with
 * `{annotation}` units, and no unit or `_total` in the name (exporters add those, e.g. Prometheus'
 * `distributed_lock_wait_duration_seconds`).
 */

/** The instrumentation scope (meter and tracer name). */
export const INSTRUMENTATION_SCOPE = 'nest-distributed-lock';

export const LockMetricNames = {
  /** Histogram, s: from the call to acquire() until the grant (outcome 'acquired') or until it gave up ('timeout'). */
  waitDuration: 'distributed_lock.wait.duration',
  /** Histogram, s: from the grant until the release (outcome 'released') or the loss ('lost'). */
  holdDuration: 'distributed_lock.hold.duration',
  acquisitions: 'distributed_lock.acquisitions',
  timeouts: 'distributed_lock.timeouts',
  renewals: 'distributed_lock.renewals',
  atRisk: 'distributed_lock.at_risk',
  lost: 'distributed_lock.lost',
  releases: 'distributed_lock.releases',
  /** Observable up-down counter (a gauge in Prometheus): locks this process holds now. */
  held: 'distributed_lock.held.count',
} as const;

/** Attribute keys. Metric attributes are bounded: never a resolved key, a holder id or a request id. */
export const LockAttributes = {
  backend: 'backend',
  family: 'lock.family',
  /** 'acquired' | 'timeout' on wait durations; 'released' | 'lost' on hold durations; also on spans. */
  outcome: 'lock.outcome',
  // Span-only attributes (a span may carry high-cardinality values; a metric may not).
  mode: 'lock.mode',
  operation: 'lock.operation',
  key: 'lock.key',
  namespace: 'lock.namespace',
  holder: 'lock.holder',
  fencingToken: 'lock.fencing_token',
  waitTimeMs: 'lock.wait_time_ms',
  errorType: 'error.type',
} as const;

/** The span that wraps acquire() and tryAcquire(). */
export const ACQUIRE_SPAN_NAME = 'distributed_lock.acquire';

/** Histogram buckets in seconds: waits are usually short, with a long tail up to typical waitTimeouts. */
export const WAIT_BUCKETS_S = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Holds span request handlers (ms) to batch jobs (many minutes). */
export const HOLD_BUCKETS_S = [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
