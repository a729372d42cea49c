import type { BackendKind } from '../support/backends';

/**
 * What the parent test and a forked lock worker (lock-worker.ts) say to each other over IPC.
 * bigints travel as decimal strings: IPC uses JSON.
 */
export interface WorkerConfig {
  /**
   * increment: `iterations` times acquire -> read counter file -> pause -> write +1 -> release, reporting each critical section;
   * hold:      acquire, report the fencing token, then never release (the parent SIGKILLs it);
   * lifecycle: exercise acquire/renew/wait/timeout/close, then exit by itself: proves nothing is left open.
   */
  mode: 'increment' | 'hold' | 'lifecycle';
  /** Index of this worker among its siblings, echoed in its reports. */
  worker: number;
  backend: BackendKind;
  /** Server address (redis url / etcd endpoint); '' for memory. */
  address: string;
  keyPrefix: string;
  key: string;
  ttl: number;
  /** hold: the lock's lockDelay (LockOptions.lockDelay). */
  lockDelay?: number;
  waitTimeout?: number;
  iterations?: number;
  /** increment: the shared counter, a file outside the lock service. */
  counterFile?: string;
  /** increment: ms spent between reading and writing the counter. */
  pauseMs?: number;
}

/** One critical section: process.hrtime.bigint() readings (CLOCK_MONOTONIC, the same clock in every process). */
export interface SectionReport {
  worker: number;
  start: string;
  end: string;
  fencingToken: string;
  /** The counter value read inside the section. */
  read: number;
}

export type ParentMessage = { type: 'go' };

export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'done'; sections?: SectionReport[]; summary?: Record<string, unknown> }
  | {
      type: 'held';
      fencingToken: string;
      token: string;
      expiresAt: number;
      /** performance.timeOrigin + performance.now() just before the acquire: comparable across processes. */
      requestedAt: number;
    }
  | { type: 'error'; name: string; message: string; stack?: string };

export const WORKER_CONFIG_ENV = 'NDL_LOCK_WORKER_CONFIG';
