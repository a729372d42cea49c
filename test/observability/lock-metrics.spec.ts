import { DataPointType } from '@opentelemetry/sdk-metrics';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { LockTimeoutError } from '../../lib/errors';
import { LockService } from '../../lib/lock.service';
import { attachLockMetrics } from '../../lib/observability/lock-metrics';
import { LockMetricNames } from '../../lib/observability/telemetry-names';
import { FlakyBackend } from './support/flaky-backend';
import { counterValue, histogramPoint, MetricsHarness, pointWith } from './support/metrics-harness';

const FILE = { backend: 'memory', 'lock.family': 'file' };

describe('attachLockMetrics', () => {
  let harness: MetricsHarness;

  beforeEach(() => {
    harness = new MetricsHarness();
  });

  afterEach(async () => {
    await harness.shutdown();
  });

  it('counts acquisitions, timeouts, renewals and releases, and records wait and hold durations in seconds', async () => {
    const locks = new LockService(new MemoryLockBackend(), { keyPrefix: 'metrics' });
    attachLockMetrics(locks, { meterProvider: harness.meterProvider });

    const holdStarted = Date.now();
    // A ttl that a loaded CI machine cannot starve: at 150 ms, one pause of the worker past 100 ms lost the lock.
    const lock = await locks.acquire('file:1', { ttl: 1_500 });
    await firstValueFrom(lock.renewals$);
    await expect(locks.acquire('file:1', { waitTimeout: 100 })).rejects.toBeInstanceOf(LockTimeoutError);
    await lock.release();
    const heldFor = (Date.now() - holdStarted) / 1_000;
    await (await locks.acquire('file:2')).release();
    await (await locks.acquire('job:9', { family: 'nightly-job' })).release();

    const metrics = await harness.snapshot();
    expect(counterValue(metrics.get(LockMetricNames.acquisitions), FILE)).toBe(2);
    expect(counterValue(metrics.get(LockMetricNames.acquisitions), { 'lock.family': 'nightly-job' })).toBe(1);
    expect(counterValue(metrics.get(LockMetricNames.timeouts), FILE)).toBe(1);
    expect(counterValue(metrics.get(LockMetricNames.renewals), FILE)).toBeGreaterThanOrEqual(1);
    expect(counterValue(metrics.get(LockMetricNames.releases), FILE)).toBe(2);
    expect(counterValue(metrics.get(LockMetricNames.lost), FILE)).toBe(0);

    const waits = histogramPoint(metrics.get(LockMetricNames.waitDuration), { ...FILE, 'lock.outcome': 'acquired' })!;
    expect(waits.count).toBe(2);
    // Both keys were free: the waits are a round trip to an in-process map.
    expect(waits.sum).toBeLessThan(1);
    const gaveUp = histogramPoint(metrics.get(LockMetricNames.waitDuration), { ...FILE, 'lock.outcome': 'timeout' })!;
    expect(gaveUp.count).toBe(1);
    expect(gaveUp.sum).toBeGreaterThanOrEqual(0.09);
    expect(gaveUp.sum).toBeLessThan(5);

    const holds = histogramPoint(metrics.get(LockMetricNames.holdDuration), { ...FILE, 'lock.outcome': 'released' })!;
    expect(holds.count).toBe(2);
    // The first hold lasted through a renewal (due at ttl/3, up to 10 % early) and the timed-out wait
    // (>= 450 + 100 ms), and at most the measured span.
    expect(holds.max).toBeGreaterThanOrEqual(0.54);
    expect(holds.max).toBeLessThanOrEqual(heldFor + 0.01);

    await locks.close();
  });

  it('declares units and descriptions, and labels only by backend, family and outcome (never the key or holder)', async () => {
    const locks = new LockService(new MemoryLockBackend(), { instanceId: 'api-1' });
    attachLockMetrics(locks, { meterProvider: harness.meterProvider });
    for (let id = 0; id < 20; id += 1) await (await locks.acquire(`user:${id}`)).release();

    const metrics = await harness.snapshot();
    expect(metrics.get(LockMetricNames.waitDuration)!.descriptor.unit).toBe('s');
    expect(metrics.get(LockMetricNames.holdDuration)!.descriptor.unit).toBe('s');
    expect(metrics.get(LockMetricNames.acquisitions)!.descriptor.unit).toBe('{acquisition}');
    expect(metrics.get(LockMetricNames.held)!.descriptor.unit).toBe('{lock}');
    for (const metric of metrics.values()) {
      expect(metric.descriptor.description).not.toBe('');
      for (const point of metric.dataPoints) {
        expect(
          Object.keys(point.attributes).every((name) => ['backend', 'lock.family', 'lock.outcome'].includes(name)),
        ).toBe(true);
        expect(JSON.stringify(point.attributes)).not.toMatch(/user:\d|api-1/);
      }
    }
    // Twenty keys, one family: one series.
    expect(metrics.get(LockMetricNames.acquisitions)!.dataPoints).toHaveLength(1);
    expect(counterValue(metrics.get(LockMetricNames.acquisitions), { 'lock.family': 'user' })).toBe(20);
    await locks.close();
  });

  it('observes the number of held locks', async () => {
    const locks = new LockService(new MemoryLockBackend());
    attachLockMetrics(locks, { meterProvider: harness.meterProvider });
    const a = await locks.acquire('a');
    const b = await locks.acquire('b');

    let metrics = await harness.snapshot();
    const held = metrics.get(LockMetricNames.held)!;
    expect(held.dataPointType).toBe(DataPointType.SUM);
    expect(pointWith<number>(held, { backend: 'memory' })!.value).toBe(2);

    await a.release();
    await b.release();
    metrics = await harness.snapshot();
    expect(pointWith<number>(metrics.get(LockMetricNames.held), { backend: 'memory' })!.value).toBe(0);
    await locks.close();
  });

  it('counts at-risk renewals, then the loss, with the hold time of the lost lock', async () => {
    const backend = new FlakyBackend();
    const locks = new LockService(backend);
    attachLockMetrics(locks, { meterProvider: harness.meterProvider });
    // Long enough that the first failed renewal still leaves validity on a loaded machine (see lock-logger.spec).
    const lock = await locks.acquire('report:1', { ttl: 3_000 });
    backend.extendError = new Error('ECONNRESET (injected)');
    await expect(lastValueFrom(lock.renewals$)).rejects.toThrow(/lost/);

    const metrics = await harness.snapshot();
    const report = { backend: 'memory', 'lock.family': 'report' };
    expect(counterValue(metrics.get(LockMetricNames.atRisk), report)).toBeGreaterThanOrEqual(1);
    expect(counterValue(metrics.get(LockMetricNames.lost), report)).toBe(1);
    expect(counterValue(metrics.get(LockMetricNames.releases), report)).toBe(0);
    const lost = histogramPoint(metrics.get(LockMetricNames.holdDuration), { ...report, 'lock.outcome': 'lost' })!;
    expect(lost.count).toBe(1);
    // Lost when the validity ran out: about one ttl after the last good renewal.
    expect(lost.sum).toBeGreaterThanOrEqual(2.5);
    expect(lost.sum).toBeLessThan(30);
    await locks.close();
  });

  it('counts a lock that maxHold let expire as lost', async () => {
    const locks = new LockService(new MemoryLockBackend());
    attachLockMetrics(locks, { meterProvider: harness.meterProvider });
    const lock = await locks.acquire('stuck:1', { ttl: 200, maxHold: 300 });
    await expect(lastValueFrom(lock.renewals$)).rejects.toThrow(/maxHold=300/);

    const metrics = await harness.snapshot();
    expect(counterValue(metrics.get(LockMetricNames.lost), { 'lock.family': 'stuck' })).toBe(1);
    await locks.close();
  });

  it('stops recording when detached, and when the service closes', async () => {
    const locks = new LockService(new MemoryLockBackend());
    const detach = attachLockMetrics(locks, { meterProvider: harness.meterProvider });
    await (await locks.acquire('a:1')).release();
    detach();
    await (await locks.acquire('a:2')).release();
    let metrics = await harness.snapshot();
    expect(counterValue(metrics.get(LockMetricNames.acquisitions), { 'lock.family': 'a' })).toBe(1);

    const other = new LockService(new MemoryLockBackend());
    attachLockMetrics(other, { meterProvider: harness.meterProvider });
    await other.close();
    metrics = await harness.snapshot();
    // After close, the held-locks callback is gone: no observation of the closed service remains.
    expect(metrics.get(LockMetricNames.held)?.dataPoints ?? []).toHaveLength(0);
    await locks.close();
  });
});
