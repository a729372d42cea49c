import { performance } from 'node:perf_hooks';

/** Monotonic milliseconds. Validity is measured on this clock so wall-clock jumps cannot extend a lock. */
export const monotonicNow = (): number => performance.now();

/** Converts a monotonic instant into epoch ms for display (`expiresAt`). */
export const toEpochMs = (monotonic: number): number => Math.round(Date.now() + (monotonic - performance.now()));

/** setTimeout's longest delay (2^31 - 1 ms); past it a timer fires at once, so longer waits get none or re-arm. */
export const MAX_TIMER_DELAY = 2_147_483_647;
