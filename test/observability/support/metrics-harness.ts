import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics';

/**
 * A MeterProvider that exports into memory, read on demand. The periodic reader's own interval is long:
 * tests collect explicitly with `snapshot()`.
 */
export class MetricsHarness {
  readonly exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  readonly reader = new PeriodicExportingMetricReader({ exporter: this.exporter, exportIntervalMillis: 3_600_000 });
  readonly meterProvider = new MeterProvider({ readers: [this.reader] });

  /** Every metric recorded so far, by name. */
  async snapshot(): Promise<Map<string, MetricData>> {
    this.exporter.reset();
    await this.reader.forceFlush();
    const exported = this.exporter.getMetrics();
    const metrics = exported[exported.length - 1]?.scopeMetrics.flatMap((scope) => scope.metrics) ?? [];
    return new Map(metrics.map((metric) => [metric.descriptor.name, metric]));
  }

  shutdown(): Promise<void> {
    return this.meterProvider.shutdown();
  }
}

/** The data point of `metric` whose attributes include `attributes`. */
export function pointWith<T>(
  metric: MetricData | undefined,
  attributes: Record<string, string>,
): DataPoint<T> | undefined {
  if (!metric) return undefined;
  const points = metric.dataPoints as DataPoint<T>[];
  return points.find((point) => Object.entries(attributes).every(([name, value]) => point.attributes[name] === value));
}

export function counterValue(metric: MetricData | undefined, attributes: Record<string, string>): number {
  return pointWith<number>(metric, attributes)?.value ?? 0;
}

export function histogramPoint(
  metric: MetricData | undefined,
  attributes: Record<string, string>,
): Histogram | undefined {
  if (metric && metric.dataPointType !== DataPointType.HISTOGRAM)
    throw new Error(`${metric.descriptor.name} is not a histogram`);
  return pointWith<Histogram>(metric, attributes)?.value;
}
