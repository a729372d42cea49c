import { performance } from 'node:perf_hooks';
import type { LockHandle } from '../../../lib/lock-handle';
import type { LockService } from '../../../lib/lock.service';
import type { ContractContext } from '../../contract/contract-context';
import { sleep } from '../../support/time';

/** A new reader every ARRIVAL_MS, each holding READ_HOLD_MS: about three readers hold at any moment. */
const ARRIVAL_MS = 100;
const READ_HOLD_MS = 300;
/** How long the reader stream runs at most; a starved writer would wait at least this long. */
const STREAM_MS = 20_000;
/** The writer must get in well before the stream ends (generous: two loaded cores). */
const WRITER_BOUND_MS = 10_000;

export function starvationCases(ctx: ContractContext): void {
  it(`gives a waiting writer the lock within ${WRITER_BOUND_MS} ms while new readers keep arriving every ${ARRIVAL_MS} ms`, async () => {
    const services = Array.from({ length: 4 }, () => ctx.service());
    const writerService = ctx.service();
    let readersInside = 0;
    let writerInside = false;
    let overlaps = 0;
    let readsDone = 0;
    let stop = false;
    const failures: unknown[] = [];

    const read = async (locks: LockService) => {
      let lock: LockHandle | undefined;
      try {
        lock = await locks.acquire('doc', { mode: 'read', ttl: 10_000, waitTimeout: STREAM_MS + 10_000 });
        readersInside++;
        if (writerInside) overlaps++;
        await sleep(READ_HOLD_MS);
        readersInside--;
        readsDone++;
      } catch (error) {
        failures.push(error);
      } finally {
        await lock?.release();
      }
    };
    const reads: Promise<void>[] = [];
    const stream = (async () => {
      const started = performance.now();
      for (let i = 0; !stop && performance.now() - started < STREAM_MS; i++) {
        reads.push(read(services[i % services.length]));
        await sleep(ARRIVAL_MS);
      }
    })();

    // Readers hold and keep coming: now a writer queues.
    while (readersInside === 0 && failures.length === 0) await sleep(20);
    const queuedAt = performance.now();
    const writer = await writerService.acquire('doc', { mode: 'write', ttl: 10_000, waitTimeout: STREAM_MS + 10_000 });
    const waited = performance.now() - queuedAt;
    writerInside = true;
    const readersWhenGranted = readersInside;
    await sleep(READ_HOLD_MS);
    writerInside = false;
    await writer.release();
    stop = true;
    await stream;
    await Promise.all(reads);

    expect(failures).toEqual([]);
    expect(readersWhenGranted).toBe(0);
    expect(overlaps).toBe(0);
    expect(waited).toBeLessThan(WRITER_BOUND_MS);
    expect(readsDone).toBe(reads.length);
  });
}
