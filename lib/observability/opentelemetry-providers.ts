/**
 * OpenTelemetry's `MeterProvider` and `TracerProvider` (from @opentelemetry/api or an SDK), described by the one
 * method we call instead of imported, so that our type declarations need no @opentelemetry/api in an app that
 * records no telemetry. Any real provider fits as it is; what it returns is used through the API's own types.
 */
export interface OpenTelemetryMeterProvider {
  getMeter(name: string, version?: string, options?: object): object;
}

/** See OpenTelemetryMeterProvider. */
export interface OpenTelemetryTracerProvider {
  getTracer(name: string, version?: string, options?: object): object;
}
