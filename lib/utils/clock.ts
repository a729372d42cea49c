import { performance } from 'node:perf_hooks';

/** Monotonic milliseconds. Validity is measured on this clock so wall-clock jumps cannot extend a lock. */
export const monotonicNow = (): number => performance.now();

/** Converts a monotonic instant into epoch ms for display (`expiresAt`). */
export const toEpochMs = (monotonic: number): number => Math.round(Date.now() + (monotonic - performance.now()));
