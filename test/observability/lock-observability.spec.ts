import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Logger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { metrics } from '@opentelemetry/api';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { DISTRIBUTED_LOCK_MODULE_OPTIONS } from '../../lib/distributed-lock.module-definition';
import { LockService } from '../../lib/lock.service';
import { LockObservability } from '../../lib/observability/lock-observability';
import type { LockObservabilityOptions } from '../../lib/observability/lock-observability.options';
import { MissingPackageError } from '../../lib/errors';
import { loadOptionalPackage } from '../../lib/utils/optional-package';
import { ACQUIRE_SPAN_NAME, LockMetricNames } from '../../lib/observability/telemetry-names';
import { counterValue, MetricsHarness } from './support/metrics-harness';
import { RecordingLogger } from './support/recording-logger';

/** LockObservability as DistributedLockModule provides it: next to LockService and the module options. */
async function withObservability(options: LockObservabilityOptions) {
  const locks = new LockService(new MemoryLockBackend());
  const moduleRef = await Test.createTestingModule({
    providers: [
      { provide: LockService, useValue: locks },
      { provide: DISTRIBUTED_LOCK_MODULE_OPTIONS, useValue: options },
      LockObservability,
    ],
  }).compile();
  await moduleRef.init();
  return { locks, moduleRef };
}

describe('LockObservability (module options telemetry and logging)', () => {
  it('attaches metrics, traces and logging from the module options', async () => {
    const harness = new MetricsHarness();
    const spans = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    const logger = new RecordingLogger();
    const { locks, moduleRef } = await withObservability({
      telemetry: { meterProvider: harness.meterProvider, tracerProvider },
      logging: logger,
    });

    await (await locks.acquire('file:1')).release();
    const metrics = await harness.snapshot();
    expect(counterValue(metrics.get(LockMetricNames.acquisitions), { 'lock.family': 'file' })).toBe(1);
    expect(spans.getFinishedSpans().map((span) => span.name)).toEqual([ACQUIRE_SPAN_NAME]);
    expect(logger.lines.map((line) => line.level)).toEqual(['debug', 'debug']);

    moduleRef.get(LockObservability).detach();
    await (await locks.acquire('file:2')).release();
    expect(logger.lines).toHaveLength(2);
    await moduleRef.close();
    await locks.close();
    await harness.shutdown();
    await tracerProvider.shutdown();
  });

  it("logs through Nest's Logger by default, and records no telemetry unless asked", async () => {
    const appLogger = new RecordingLogger();
    const harness = new MetricsHarness();
    metrics.setGlobalMeterProvider(harness.meterProvider);
    try {
      const { locks, moduleRef } = await withObservability({});
      // After compile(): the testing module installs its own quiet logger.
      Logger.overrideLogger(appLogger);
      await (await locks.acquire('file:1')).release();
      expect(appLogger.lines.map((line) => [line.level, line.context])).toEqual([
        ['debug', 'DistributedLock'],
        ['debug', 'DistributedLock'],
      ]);
      expect((await harness.snapshot()).size).toBe(0);
      await moduleRef.close();
      await locks.close();
    } finally {
      Logger.overrideLogger(false);
      metrics.disable();
      await harness.shutdown();
    }
  });

  it('names the package to install when an optional peer is missing', () => {
    expect(() => loadOptionalPackage('@example/not-installed', 'Lock metrics')).toThrow(MissingPackageError);
    expect(() => loadOptionalPackage('@example/not-installed', 'Lock metrics')).toThrow(
      'Lock metrics needs the "@example/not-installed" package, which is not installed. Run: npm install @example/not-installed',
    );
  });
});
