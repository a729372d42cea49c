import type { LockMode } from '../../lib/lock-options';

export const KINDS_WORKER_ENV = 'NDL_KINDS_WORKER_CONFIG';

export interface KindsWorkerConfig {
  role: 'hold' | 'contend' | 'turn';
  redisUrl: string;
  fairness?: 'none' | 'fifo';
  waiterTtl?: number;
  keyPrefix: string;
  key: string;
  mode?: LockMode;
  permits?: number;
  ttl: number;
  waitTimeout?: number;
  /** contend: concurrent acquire loops in this process, and how long each holds. */
  contenders?: number;
  holdMs?: number;
}

/** A critical section, in process.hrtime.bigint() (CLOCK_MONOTONIC: comparable across processes). */
export interface KindsSection {
  start: string;
  end: string;
  fencingToken: string;
}

export type KindsParentMessage = { type: 'go' };

export type KindsWorkerMessage =
  | { type: 'ready' }
  | { type: 'held'; token: string; fencingToken: string }
  | { type: 'done'; sections: KindsSection[] }
  | { type: 'error'; message: string; stack?: string };
