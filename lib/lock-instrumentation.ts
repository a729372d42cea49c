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

/** @internal A LockService's instrumentations, each wrapping the next around an acquisition (first added outermost). */
export class AcquireTracing {
  private readonly list: LockInstrumentation[] = [];

  constructor(
    private readonly backend: string,
    private readonly holder: string,
  ) {}

  /** Whether any instrumentation is added: without one (the usual case), callers skip trace() and its closure. */
  get active(): boolean {
    return this.list.length > 0;
  }

  add(instrumentation: LockInstrumentation): () => void {
    this.list.push(instrumentation);
    return () => {
      const index = this.list.indexOf(instrumentation);
      if (index >= 0) this.list.splice(index, 1);
    };
  }

  /** `run` inside every instrumentation's traceAcquire; with none (the usual case), `run` alone. */
  trace<T>(
    operation: AcquireTraceInfo['operation'],
    request: { readonly key: string; readonly namespace: string },
    resolved: { readonly family: string; readonly mode: LockMode },
    run: () => Promise<T>,
  ): Promise<T> {
    if (this.list.length === 0) return run();
    const info: AcquireTraceInfo = {
      operation,
      key: request.key,
      namespace: request.namespace,
      family: resolved.family,
      mode: resolved.mode,
      backend: this.backend,
      holder: this.holder,
    };
    return this.list.reduceRight<() => Promise<T>>(
      (next, instrumentation) => () =>
        instrumentation.traceAcquire ? instrumentation.traceAcquire(info, next) : next(),
      run,
    )();
  }
}
