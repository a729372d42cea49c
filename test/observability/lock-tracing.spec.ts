import { SpanStatusCode } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { LockBackendError, LockTimeoutError } from '../../lib/errors';
import { LockService } from '../../lib/lock.service';
import { attachLockTelemetry } from '../../lib/observability/lock-telemetry';
import { attachLockTracing } from '../../lib/observability/lock-tracing';
import { ACQUIRE_SPAN_NAME } from '../../lib/observability/telemetry-names';
import { FlakyBackend } from './support/flaky-backend';

describe('attachLockTracing', () => {
  let exporter: InMemorySpanExporter;
  let tracerProvider: BasicTracerProvider;

  beforeEach(() => {
    exporter = new InMemorySpanExporter();
    tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  });

  afterEach(async () => {
    await tracerProvider.shutdown();
  });

  const spans = (): ReadableSpan[] => exporter.getFinishedSpans().filter((span) => span.name === ACQUIRE_SPAN_NAME);

  it('wraps a successful acquire in a span with backend, family, mode, outcome, fencing token and wait time', async () => {
    const locks = new LockService(new MemoryLockBackend(), { keyPrefix: 'traced', instanceId: 'api-1' });
    attachLockTracing(locks, { tracerProvider });
    const lock = await locks.acquire('file:42', { mode: 'write' });

    const [span] = spans();
    expect(span).toBeDefined();
    expect(span.attributes).toMatchObject({
      backend: 'memory',
      'lock.family': 'file',
      'lock.mode': 'write',
      'lock.operation': 'acquire',
      'lock.key': 'file:42',
      'lock.namespace': 'traced',
      'lock.outcome': 'acquired',
      'lock.fencing_token': lock.fencingToken.toString(),
    });
    expect(span.attributes['lock.holder']).toMatch(/\/\d+\/api-1$/);
    expect(span.attributes['lock.wait_time_ms']).toBeGreaterThanOrEqual(0);
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
    // Nothing secret on the span: the owner token stays in the handle.
    expect(JSON.stringify(span.attributes)).not.toContain(lock.token);
    await lock.release();
    await locks.close();
  });

  it('marks a timed-out wait as an error with its wait time, and a busy tryAcquire as a plain "busy"', async () => {
    const locks = new LockService(new MemoryLockBackend());
    attachLockTracing(locks, { tracerProvider });
    const holder = await locks.acquire('file:1');
    exporter.reset();

    await expect(locks.acquire('file:1', { waitTimeout: 100 })).rejects.toBeInstanceOf(LockTimeoutError);
    expect(await locks.tryAcquire('file:1')).toBeNull();

    const [timedOut, busy] = spans();
    expect(timedOut.attributes).toMatchObject({
      'lock.outcome': 'timeout',
      'error.type': 'LockTimeoutError',
      'lock.operation': 'acquire',
    });
    expect(timedOut.attributes['lock.wait_time_ms']).toBeGreaterThanOrEqual(90);
    expect(timedOut.status).toMatchObject({ code: SpanStatusCode.ERROR });
    expect(timedOut.status.message).toMatch(/did not become free within waitTimeout=100 ms/);
    expect(timedOut.events.map((event) => event.name)).toContain('exception');

    expect(busy.attributes).toMatchObject({ 'lock.outcome': 'busy', 'lock.operation': 'tryAcquire' });
    expect(busy.attributes['lock.fencing_token']).toBeUndefined();
    expect(busy.status.code).toBe(SpanStatusCode.UNSET);
    await holder.release();
    await locks.close();
  });

  it('marks a backend failure as an error, without credentials in the status message', async () => {
    const backend = new FlakyBackend();
    backend.acquireError = new Error('connect ECONNREFUSED redis://app:s3cret@10.0.0.7:6380');
    const locks = new LockService(backend);
    attachLockTracing(locks, { tracerProvider });

    await expect(locks.acquire('file:1')).rejects.toBeInstanceOf(LockBackendError);
    const [span] = spans();
    expect(span.attributes).toMatchObject({ 'lock.outcome': 'error', 'error.type': 'LockBackendError' });
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(span.status.message).toContain('ECONNREFUSED');
    expect(JSON.stringify([span.status, span.events])).not.toContain('s3cret');
    await locks.close();
  });

  it('leaves keys out when recordKeys is false, and stops when detached', async () => {
    const locks = new LockService(new MemoryLockBackend());
    const detach = attachLockTracing(locks, { tracerProvider, recordKeys: false });
    await (await locks.acquire('user:alice@example.com')).release();
    expect(spans()).toHaveLength(1);
    expect(spans()[0].attributes['lock.key']).toBeUndefined();
    expect(JSON.stringify(spans()[0].attributes)).not.toContain('alice');

    detach();
    await (await locks.acquire('user:bob')).release();
    expect(spans()).toHaveLength(1);
    await locks.close();
  });

  it('is a no-op, and locks still work, when the app registered no OpenTelemetry SDK', async () => {
    const locks = new LockService(new MemoryLockBackend());
    const detach = attachLockTelemetry(locks);
    const lock = await locks.acquire('file:1');
    expect(lock.isHeld).toBe(true);
    await lock.release();
    detach();
    expect(spans()).toHaveLength(0);
    await locks.close();
  });
});
