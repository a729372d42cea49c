import fc from 'fast-check';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import {
  HeldLocksTracker,
  LockAdminController,
  LockHealthIndicator,
  LockLostError,
  LockService,
  LockTimeoutError,
} from '../../lib';
import type { AcquireRequest, HeldLock, LockBackend, LockGrant } from '../../lib';
import { jsonSafe, toJson } from '../../lib/utils/json';
import { FaultyBackend } from './faulty-backend';

/**
 * Every value the library hands to user code survives JSON.stringify (a Nest route returning it would answer
 * 500 otherwise), with fencing tokens as decimal strings, also past 2^53, and never an owner token.
 */
describe('JSON-safe values', () => {
  it('a fencing token of any size becomes its decimal string, wherever it sits', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 128n }), fc.string(), (fencingToken, key) => {
        const handed = jsonSafe({
          key,
          fencingToken,
          holders: [{ fencingToken, since: 1 }],
          error: new LockTimeoutError(key, 5),
        });
        const parsed = JSON.parse(JSON.stringify(handed));
        expect(parsed).toEqual({
          key,
          fencingToken: fencingToken.toString(),
          holders: [{ fencingToken: fencingToken.toString(), since: 1 }],
          error: expect.objectContaining({ name: 'LockTimeoutError', key, waitTimeout: 5 }),
        });
        expect(BigInt(parsed.fencingToken)).toBe(fencingToken);
        expect(toJson(handed)).toEqual(parsed);
        // Invisible to util.inspect and Object.keys: loggers print the same fields as before.
        expect(Object.keys(handed)).toEqual(['key', 'fencingToken', 'holders', 'error']);
      }),
      { numRuns: 200 },
    );
  });

  it('handles, events, renewals, inspections, admin reports, health results and errors all serialise', async () => {
    await fc.assert(
      fc.asyncProperty(fc.bigInt({ min: 0n, max: 2n ** 96n }), async (offset) => {
        const backend = new OffsetBackend(offset);
        const locks = new LockService(backend, { keyPrefix: 'json' });
        const tracker = new HeldLocksTracker(locks);
        const sent: string[] = [];
        const send = (value: unknown): Record<string, unknown> => {
          const text = JSON.stringify(value);
          sent.push(text);
          return JSON.parse(text);
        };
        const events: Record<string, unknown>[] = [];
        locks.events$.subscribe((event) => events.push(send(event)));
        try {
          // A ttl long enough that a failed renewal is reported at-risk before validity runs out, even on a loaded machine.
          const lock = await locks.acquire('file:1', { ttl: 1_000 });
          const expectedToken = lock.fencingToken.toString();
          expect(lock.fencingToken).toBeGreaterThan(offset);
          const renewals: Record<string, unknown>[] = [];
          lock.renewals$.subscribe({ next: (renewal) => renewals.push(send(renewal)), error: () => undefined });

          const handle = send(lock);
          expect(handle).toEqual({ key: 'file:1', fencingToken: expectedToken, expiresAt: expect.any(Number) });
          // expiresAt converts a monotonic time to epoch ms on each read, so two reads may differ by 1 ms.
          expect(Math.abs((handle.expiresAt as number) - lock.expiresAt)).toBeLessThanOrEqual(1);
          await firstValueFrom(lock.renewals$);
          const inspection = send(await locks.inspect('file:1'));
          expect(inspection.holders).toEqual([expect.objectContaining({ fencingToken: expectedToken })]);
          expect(send(tracker.list())).toEqual([
            expect.objectContaining({ key: 'file:1', fencingToken: expectedToken }),
          ]);
          expect(send(new LockAdminController(locks, tracker).held())).toMatchObject({
            held: [{ fencingToken: expectedToken }],
          });
          expect(send(await new LockHealthIndicator(locks).isHealthy())).toMatchObject({ lock: { status: 'up' } });
          const timeout = await locks.acquire('file:1', { waitTimeout: 20 }).catch((error: unknown) => error);
          expect(send(timeout)).toMatchObject({ name: 'LockTimeoutError', key: 'file:1' });

          backend.extendFault = 'error';
          const lost = await lastValueFrom(lock.renewals$).catch((error: unknown) => error);
          expect(lost).toBeInstanceOf(LockLostError);
          expect(send(lost)).toMatchObject({ name: 'LockLostError', key: 'file:1' });
          backend.extendFault = 'none';
          const second = await locks.acquire('file:2', { ttl: 1_000 });
          await second.release();

          expect(renewals.map((renewal) => renewal.type)).toEqual(expect.arrayContaining(['renewed', 'at-risk']));
          for (const renewal of renewals) expect(renewal.fencingToken).toBe(expectedToken);
          const atRisk = renewals.find((renewal) => renewal.type === 'at-risk')!;
          expect(atRisk.error).toMatchObject({
            name: 'LockBackendError',
            message: expect.stringContaining('ECONNRESET'),
          });
          expect(new Set(events.map((event) => event.type))).toEqual(
            new Set(['acquired', 'renewed', 'timeout', 'at-risk', 'lost', 'released']),
          );
          for (const event of events) {
            if (event.type !== 'timeout') expect(event.fencingToken).toMatch(/^\d+$/);
            if (event.key === 'file:1' && event.type !== 'timeout') expect(event.fencingToken).toBe(expectedToken);
          }
          // The owner token lets whoever has it release the lock: nothing serialised may carry it.
          for (const text of sent) {
            expect(text).not.toContain(lock.token);
            expect(text).not.toContain(second.token);
          }
        } finally {
          tracker.onModuleDestroy();
          await locks.close();
        }
      }),
      { numRuns: 5 },
    );
  });
});

/** Hands out fencing tokens `offset` above the memory backend's, so the test sees tokens past 2^53. */
class OffsetBackend implements LockBackend {
  readonly kind = 'memory';
  readonly address = 'in-process';
  private readonly faulty = new FaultyBackend();

  constructor(private readonly offset: bigint) {}

  set extendFault(fault: FaultyBackend['extendFault']) {
    this.faulty.extendFault = fault;
  }

  async tryAcquire(request: AcquireRequest): Promise<LockGrant | null> {
    return this.shifted(await this.faulty.tryAcquire(request));
  }

  async acquire(request: AcquireRequest, signal: AbortSignal): Promise<LockGrant> {
    return this.shifted(await this.faulty.acquire(request, signal))!;
  }

  extend(lock: HeldLock, ttl: number): Promise<number | null> {
    return this.faulty.extend(this.unshifted(lock), ttl);
  }

  release(lock: HeldLock): Promise<boolean> {
    return this.faulty.release(this.unshifted(lock));
  }

  isLocked(namespace: string, key: string): Promise<boolean> {
    return this.faulty.isLocked(namespace, key);
  }

  async inspect(namespace: string, key: string) {
    const found = await this.faulty.inner.inspect(namespace, key);
    const shift = <T extends { fencingToken?: bigint }>(entry: T): T =>
      entry.fencingToken === undefined ? entry : { ...entry, fencingToken: entry.fencingToken + this.offset };
    return { holders: found.holders.map(shift), ...(found.waiters && { waiters: found.waiters.map(shift) }) };
  }

  close(): Promise<void> {
    return this.faulty.close();
  }

  private shifted(grant: LockGrant | null): LockGrant | null {
    return grant && { ...grant, fencingToken: grant.fencingToken + this.offset };
  }

  private unshifted(lock: HeldLock): HeldLock {
    return { ...lock, fencingToken: lock.fencingToken - this.offset };
  }
}
