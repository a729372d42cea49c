import type { Attributes, Span, Tracer, TracerProvider } from '@opentelemetry/api';
import { LockTimeoutError } from '../errors/lock-timeout.error';
import { LockHandle } from '../lock-handle';
import type { AcquireTraceInfo } from '../lock-instrumentation';
import type { LockService } from '../lock.service';
import { monotonicNow } from '../utils/clock';
import { loadOpenTelemetryApi, type OpenTelemetryApi } from './opentelemetry-api';
import type { OpenTelemetryTracerProvider } from './opentelemetry-providers';
import { redactCredentials } from '../utils/redact';
import { ACQUIRE_SPAN_NAME, INSTRUMENTATION_SCOPE, LockAttributes } from './telemetry-names';

export interface LockTracingOptions {
  /** Default: the global TracerProvider (a proxy, so an SDK registered later is picked up). */
  tracerProvider?: OpenTelemetryTracerProvider;
  /**
   * Put the resolved key on spans (`lock.key`). Default true: it answers "which key was this request waiting for".
   * Turn it off when keys contain personal data your traces must not hold.
   */
  recordKeys?: boolean;
}

/**
 * Wraps every acquire() and tryAcquire() of `locks` in a `distributed_lock.acquire` span, made active so that
 * backend client spans (ioredis, grpc) nest under it. Returns a function that stops tracing.
 */
export function attachLockTracing(locks: LockService, options: LockTracingOptions = {}): () => void {
  const api = loadOpenTelemetryApi('Lock tracing');
  const provider = (options.tracerProvider as TracerProvider | undefined) ?? api.trace.getTracerProvider();
  const tracer = provider.getTracer(INSTRUMENTATION_SCOPE);
  const recordKeys = options.recordKeys ?? true;
  return locks.instrument({
    traceAcquire: (info, run) => traceAcquire(api, tracer, info, run, recordKeys),
  });
}

function traceAcquire<T>(
  api: OpenTelemetryApi,
  tracer: Tracer,
  info: AcquireTraceInfo,
  run: () => Promise<T>,
  recordKeys: boolean,
): Promise<T> {
  const attributes: Attributes = {
    [LockAttributes.backend]: info.backend,
    [LockAttributes.family]: info.family,
    [LockAttributes.mode]: info.mode,
    [LockAttributes.operation]: info.operation,
    [LockAttributes.namespace]: info.namespace,
    [LockAttributes.holder]: info.holder,
    ...(recordKeys && { [LockAttributes.key]: info.key }),
  };
  return tracer.startActiveSpan(ACQUIRE_SPAN_NAME, { kind: api.SpanKind.INTERNAL, attributes }, async (span: Span) => {
    const started = monotonicNow();
    const finish = (outcome: string) => {
      span.setAttribute(LockAttributes.outcome, outcome);
      span.setAttribute(LockAttributes.waitTimeMs, Math.round(monotonicNow() - started));
      span.end();
    };
    try {
      const result = await run();
      if (result instanceof LockHandle) {
        // A string: bigint is not an attribute type, and tokens may pass 2^53.
        span.setAttribute(LockAttributes.fencingToken, result.fencingToken.toString());
        finish('acquired');
      } else {
        // tryAcquire() found the key busy: an expected answer, not an error.
        finish('busy');
      }
      return result;
    } catch (error) {
      const timedOut = error instanceof LockTimeoutError;
      const message = redactCredentials(error instanceof Error ? error.message : String(error));
      span.setAttribute(LockAttributes.errorType, error instanceof Error ? error.name : 'Error');
      if (error instanceof Error) {
        span.recordException({
          name: error.name,
          message,
          ...(error.stack && { stack: redactCredentials(error.stack) }),
        });
      }
      span.setStatus({ code: api.SpanStatusCode.ERROR, message });
      finish(timedOut ? 'timeout' : 'error');
      throw error;
    }
  });
}
