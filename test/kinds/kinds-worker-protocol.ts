import type { BackendKind } from '../support/backends';

/** What the kinds suite and its forked worker (kinds-worker.ts) say over IPC. bigints travel as decimal strings. */
export interface KindsWorkerConfig {
  /**
   * hold:      acquire once with `mode`/`permits`, report it, then never release (the parent SIGKILLs it);
   * semaphore: `contenders` clients, each on its own connection, each acquiring a permit once, holding it
   *            `holdMs`, and releasing; reports every holder's interval.
   */
  task: 'hold' | 'semaphore';
  worker: number;
  backend: BackendKind;
  address: string;
  keyPrefix: string;
  key: string;
  ttl: number;
  waitTimeout: number;
  mode?: 'exclusive' | 'read' | 'write';
  permits?: number;
  contenders?: number;
  holdMs?: number;
}

/** One holder's time inside: process.hrtime.bigint() readings (CLOCK_MONOTONIC, the same in every process). */
export interface Interval {
  readonly start: string;
  readonly end: string;
  readonly fencingToken: string;
}

export type KindsParentMessage = { type: 'go' };

export type KindsWorkerMessage =
  | { type: 'ready' }
  | { type: 'held'; fencingToken: string }
  | { type: 'done'; intervals: Interval[] }
  | { type: 'error'; message: string };

export const KINDS_WORKER_ENV = 'NDL_KINDS_WORKER_CONFIG';
