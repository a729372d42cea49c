import { sleep, wallNow } from '../lib/clock';
import type { GrantRecord } from '../lib/grants';
import type { LockAdapter } from '../peers/adapter';

/** Shared by the contenders of one process: when to stop, and how many grants are left. */
export interface StopRule {
  /** Wall-clock ms after which no contender starts a new acquire. */
  readonly until: number;
  remainingGrants: number;
  /** Pause after each release before asking again (the work outside the lock). */
  readonly thinkMs: number;
  /** How long each grant is held before release (0 or absent: released at once). */
  readonly holdMs?: number;
}

/**
 * One contender: acquire, record, hold (if asked), release, think, repeat. Holding for zero time makes the figures the
 * lock's own cost; the short think time keeps a releaser from taking the lock straight back before any
 * waiter could, which would measure one contender looping rather than a handoff. The acquire in flight
 * when the run stops still completes (and is recorded), so nobody is left waiting on the server.
 */
export async function contend(
  adapter: LockAdapter,
  key: string,
  stop: StopRule,
  records: GrantRecord[],
): Promise<void> {
  while (wallNow() < stop.until && stop.remainingGrants > 0) {
    const arrive = wallNow();
    const handle = await adapter.acquire(key);
    const grant = wallNow();
    stop.remainingGrants--;
    if (stop.holdMs) await sleep(stop.holdMs);
    const release = wallNow();
    records.push({ arrive, grant, release });
    await adapter.release(handle);
    if (stop.thinkMs > 0) await sleep(stop.thinkMs);
  }
}

export async function contendAll(
  adapter: LockAdapter,
  key: string,
  contenders: number,
  stop: StopRule,
): Promise<GrantRecord[]> {
  const records: GrantRecord[] = [];
  await Promise.all(Array.from({ length: contenders }, () => contend(adapter, key, stop, records)));
  return records;
}
