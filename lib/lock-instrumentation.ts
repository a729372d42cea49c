import type { LockMode } from './lock-options';

/** What a tracer learns about an acquisition before it starts. */
export interface AcquireTraceInfo {
  readonly operation: 'acquire' | 'tryAcquire';
  readonly key: string;
  readonly namespace: string;
  readonly family: string;
  readonly mode: LockMode;
  readonly backend: string;
  readonly holder: string;
}

/** A hook around acquisitions, e.g. an OpenTelemetry span. `run` performs the acquisition; return its result. */
export interface LockInstrumentation {
  traceAcquire?<T>(info: AcquireTraceInfo, run: () => Promise<T>): Promise<T>;
}
