import type { ChaosBackendKind } from './backends';

/**
 * What the chaos parent and a forked chaos worker (chaos-worker.ts) say to each other over IPC.
 * Times are process.hrtime.bigint() readings as decimal strings: CLOCK_MONOTONIC, one clock for every
 * process on the machine, so the parent can order events recorded by different workers.
 */
export interface ChaosWorkerConfig {
  /** Names the worker in records and in the register's history, e.g. 'w3'. */
  id: string;
  backend: ChaosBackendKind;
  address: string;
  keyPrefix: string;
  registerPort: number;
  /** LockService operationTimeout (release/isLocked deadline); default the library's. */
  operationTimeout?: number;
  task: IncrementTask | HoldTask | LeakTask;
}

/**
 * `contenders` async loops, each: acquire -> read the register -> sleep `sectionMs` -> write value + 1 ->
 * release, until it has `target` acknowledged writes, `durationMs` passed, or the parent says finish.
 * Failed acquisitions (timeouts, server errors) are counted and retried.
 */
export interface IncrementTask {
  type: 'increments';
  keys: string[];
  /** Zipf exponent for choosing among `keys` (rank 1 most often); absent: uniform. */
  zipf?: number;
  contenders: number;
  /** Acknowledged writes per contender; 0: until durationMs or 'finish'. */
  target: number;
  durationMs?: number;
  ttl: number;
  waitTimeout: number;
  sectionMs: number;
  /** Pause before retrying after a failed acquisition. */
  retryDelayMs?: number;
}

/**
 * Acquires `key` once and reports 'held' (or 'acquire-failed'); with `readOnGrant` it also reads the
 * register under its token, so a later 'write' command completes a read-modify-write spanning whatever fault
 * the parent injects meanwhile. Reports 'lost' when the handle's signal fires. Then follows commands.
 */
export interface HoldTask {
  type: 'hold';
  key: string;
  ttl: number;
  waitTimeout: number;
  readOnGrant?: boolean;
}

/**
 * `cycles` acquire/release cycles (with contention, waits, timeouts and tryAcquire misses mixed in), heap
 * measured after a warm-up and at the end, then close() and a report of what is still open. The worker
 * then disconnects and must exit by itself.
 */
export interface LeakTask {
  type: 'leak';
  cycles: number;
  ttl: number;
}

/** One critical section as its holder saw it. */
export interface SectionRecord {
  worker: string;
  contender: number;
  key: string;
  token: string;
  /** Just after acquire resolved. */
  acquiredAt: string;
  /** The end of the validity the library last promised (after the grant or the last renewal). */
  validUntil: string;
  /** Just before release was called. */
  releasedAt: string;
  /** How long acquire took, ms. */
  waitMs: number;
  read: 'ok' | 'stale' | 'error';
  write: 'ok' | 'stale' | 'error' | 'skipped';
  writeAt?: string;
  /** When lock.signal fired, if it did before release. */
  lostAt?: string;
  /** A fault the worker injected into this section between its read and its write. */
  fault?: 'stop' | 'block';
  faultStart?: string;
  faultEnd?: string;
}

export interface FailedAcquire {
  worker: string;
  contender: number;
  at: string;
  name: string;
  message: string;
}

export interface IncrementSummary {
  acknowledged: number;
  attempts: number;
  failures: Record<string, number>;
  releaseFailures: number;
}

export interface LeakReport {
  cycles: number;
  /** Heap used after a forced GC, bytes: after the warm-up cycles, and at the end (before close). */
  heapAfterWarmup: number;
  heapAtEnd: number;
  /** process.getActiveResourcesInfo() after close, minus what the worker itself keeps (IPC, its own timer). */
  resourcesAfterClose: string[];
  /** What the library reported it still tracks: held locks. */
  heldAfterClose: number;
  durationMs: number;
}

export type ChaosParentMessage =
  | { type: 'go' }
  /** The next section of any contender gets this fault between its read and its write. */
  | { type: 'arm'; fault: { kind: 'stop' } | { kind: 'block'; ms: number } }
  | { type: 'finish' }
  /** hold: write value + 1 under the held token, whatever the lock's state (a zombie does not check). */
  | { type: 'write' }
  | { type: 'release' }
  | { type: 'exit' };

export type ChaosWorkerMessage =
  | { type: 'ready' }
  | { type: 'sections'; sections: SectionRecord[]; failures: FailedAcquire[] }
  /** Sent just before the worker SIGSTOPs itself; the parent sends SIGCONT. */
  | { type: 'stopping'; at: string }
  | { type: 'held'; token: string; acquiredAt: string; validUntil: string; waitMs: number; read?: number }
  | { type: 'acquire-failed'; name: string; message: string; at: string; waitMs: number }
  | { type: 'lost'; at: string; validUntil: string; reason: string }
  | { type: 'wrote'; ok: boolean; at: string; validUntil: string }
  | { type: 'released'; at: string; error?: string }
  | { type: 'done'; summary?: IncrementSummary; leak?: LeakReport }
  | { type: 'error'; name: string; message: string; stack?: string };

export const CHAOS_WORKER_CONFIG_ENV = 'NDL_CHAOS_WORKER_CONFIG';
