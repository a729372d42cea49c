import { readFile, writeFile } from 'node:fs/promises';
import type { LockService } from '../../lib/lock.service';
import type { SectionReport } from './worker-protocol';

export interface IncrementOptions {
  worker: number;
  key: string;
  iterations: number;
  ttl: number;
  waitTimeout: number;
  counterFile: string;
  pauseMs: number;
}

/**
 * The read-modify-write that mutual exclusion must protect. The counter lives in a plain file, outside the
 * lock service, and the pause between read and write makes a lost update certain if two holders overlap.
 * Used by forked workers and, for the memory backend, by several async loops in one process.
 */
export async function runIncrements(locks: LockService, options: IncrementOptions): Promise<SectionReport[]> {
  const sections: SectionReport[] = [];
  for (let i = 0; i < options.iterations; i++) {
    const lock = await locks.acquire(options.key, { ttl: options.ttl, waitTimeout: options.waitTimeout });
    const start = process.hrtime.bigint();
    const read = Number.parseInt(await readFile(options.counterFile, 'utf8'), 10);
    await pause(options.pauseMs);
    await writeFile(options.counterFile, String(read + 1));
    const end = process.hrtime.bigint();
    sections.push({
      worker: options.worker,
      start: start.toString(),
      end: end.toString(),
      fencingToken: lock.fencingToken.toString(),
      read,
    });
    await lock.release();
  }
  return sections;
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
