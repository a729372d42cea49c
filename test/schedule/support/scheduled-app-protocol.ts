/** Messages between scheduled-app.ts and the test that forks it. */
import type { BackendKind } from '../../support/backends';
export const SCHEDULED_APP_ENV = 'SCHEDULED_APP_CONFIG';

export interface ScheduledAppConfig {
  kind: BackendKind;
  address: string;
  keyPrefix: string;
  /** How long each firing's work takes. */
  workMs: number;
  lockAtLeastFor: number;
}

export type ScheduledAppMessage =
  | { type: 'ready'; pid: number }
  | { type: 'ran'; pid: number; key: string; fencingToken: string }
  | { type: 'skipped'; pid: number; key: string };
