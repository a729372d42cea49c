import type * as OpenTelemetryApiModule from '@opentelemetry/api';
import { loadOptionalPackage } from '../utils/optional-package';

export type OpenTelemetryApi = typeof OpenTelemetryApiModule;

/**
 * `@opentelemetry/api`, loaded on first use. It is an optional peer: nothing requires it until the app turns
 * telemetry on, and then a missing package is a MissingPackageError rather than a crash at import time.
 * Without a registered SDK the API is a no-op, so recording costs next to nothing.
 */
export function loadOpenTelemetryApi(feature: string): OpenTelemetryApi {
  return loadOptionalPackage<OpenTelemetryApi>('@opentelemetry/api', feature);
}
