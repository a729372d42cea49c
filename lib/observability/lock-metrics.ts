import type { Attributes, Counter, Histogram, Meter, MeterProvider, ObservableResult } from '@opentelemetry/api';
import type { LockEvent } from '../lock-event';
import type { LockService } from '../lock.service';
import { loadOpenTelemetryApi } from './opentelemetry-api';
import type { OpenTelemetryMeterProvider } from './opentelemetry-providers';
import {
  HOLD_BUCKETS_S,
  INSTRUMENTATION_SCOPE,
  LockAttributes,
  LockMetricNames,
  WAIT_BUCKETS_S,
} from './telemetry-names';

export interface LockMetricsOptions {
  /**
   * Where to record. Default: the global MeterProvider. Metrics have no proxy provider, so register the SDK
   * (e.g. `sdk.start()`) before this is attached, or pass the provider here.
   */
  meterProvider?: OpenTelemetryMeterProvider;
}

interface LockInstruments {
  readonly wait: Histogram;
  readonly hold: Histogram;
  readonly counters: Record<LockEvent['type'], Counter>;
}

/**
 * Records every lock event of `locks` as OpenTelemetry metrics (names in telemetry-names.ts), labelled by backend
 * and key family only, so the number of series stays bounded whatever keys the app locks.
 * Returns a function that stops recording; recording also stops when the service closes.
 */
export function attachLockMetrics(locks: LockService, options: LockMetricsOptions = {}): () => void {
  const api = loadOpenTelemetryApi('Lock metrics');
  const provider = (options.meterProvider as MeterProvider | undefined) ?? api.metrics.getMeterProvider();
  const meter = provider.getMeter(INSTRUMENTATION_SCOPE);
  const instruments = createInstruments(meter);
  const held = meter.createObservableUpDownCounter(LockMetricNames.held, {
    description: 'Locks this process holds now.',
    unit: '{lock}',
  });
  const heldAttributes: Attributes = { [LockAttributes.backend]: locks.backend.kind };
  const observeHeld = (result: ObservableResult) => result.observe(locks.heldCount, heldAttributes);
  held.addCallback(observeHeld);

  let detached = false;
  const detach = () => {
    if (detached) return;
    detached = true;
    subscription.unsubscribe();
    held.removeCallback(observeHeld);
  };
  const subscription = locks.events$.subscribe({ next: (event) => record(instruments, event), complete: detach });
  return detach;
}

function createInstruments(meter: Meter): LockInstruments {
  const counter = (name: string, description: string, unit: string) => meter.createCounter(name, { description, unit });
  return {
    wait: meter.createHistogram(LockMetricNames.waitDuration, {
      description:
        'Time acquire() waited: until the grant (lock.outcome=acquired) or until it gave up (lock.outcome=timeout).',
      unit: 's',
      advice: { explicitBucketBoundaries: WAIT_BUCKETS_S },
    }),
    hold: meter.createHistogram(LockMetricNames.holdDuration, {
      description: 'Time a lock was held: until released (lock.outcome=released) or lost (lock.outcome=lost).',
      unit: 's',
      advice: { explicitBucketBoundaries: HOLD_BUCKETS_S },
    }),
    counters: {
      acquired: counter(LockMetricNames.acquisitions, 'Locks granted.', '{acquisition}'),
      timeout: counter(
        LockMetricNames.timeouts,
        'Waits that gave up because the key stayed busy for the whole waitTimeout.',
        '{timeout}',
      ),
      renewed: counter(LockMetricNames.renewals, 'Successful renewals (watchdog or extend()).', '{renewal}'),
      'at-risk': counter(
        LockMetricNames.atRisk,
        'Renewals that failed while validity remained; the watchdog retried.',
        '{event}',
      ),
      lost: counter(LockMetricNames.lost, 'Locks lost before release: expired, deleted, or maxHold reached.', '{lock}'),
      released: counter(LockMetricNames.releases, 'Locks released by their holder.', '{release}'),
    },
  };
}

function record(instruments: LockInstruments, event: LockEvent): void {
  const attributes: Attributes = { [LockAttributes.backend]: event.backend, [LockAttributes.family]: event.family };
  instruments.counters[event.type].add(1, attributes);
  switch (event.type) {
    case 'acquired':
    case 'timeout':
      instruments.wait.record(event.waitTime / 1_000, { ...attributes, [LockAttributes.outcome]: event.type });
      break;
    case 'released':
    case 'lost':
      instruments.hold.record(event.holdTime / 1_000, { ...attributes, [LockAttributes.outcome]: event.type });
      break;
  }
}
