import { LockTimeoutError } from '../../../lib/errors';
import type { ContractContext } from '../../contract/contract-context';

const READERS = 4;
/** A short wait that must time out while the key is busy. */
const BRIEF_WAIT = 300;
const LONG_WAIT = 20_000;

export function readWriteCases(ctx: ContractContext): void {
  it(`lets ${READERS} readers on separate connections hold at once (their held intervals overlap)`, async () => {
    const services = Array.from({ length: READERS }, () => ctx.service());
    const readers = await Promise.all(
      services.map((locks) => locks.acquire('doc', { mode: 'read', ttl: ctx.ttl, waitTimeout: LONG_WAIT })),
    );
    // Nobody released before all were granted: had any reader excluded another, this would have timed out.
    expect(readers.every((reader) => reader.isHeld && reader.mode === 'read')).toBe(true);
    expect(await services[0].isLocked('doc')).toBe(true);
    await Promise.all(readers.map((reader) => reader.release()));
    expect(await services[0].isLocked('doc')).toBe(false);
  });

  it('keeps writers out while readers hold, and readers and writers out while a writer holds', async () => {
    const [a, b, c] = [ctx.service(), ctx.service(), ctx.service()];
    const readers = [
      await a.acquire('doc', { mode: 'read', ttl: ctx.ttl }),
      await b.acquire('doc', { mode: 'read', ttl: ctx.ttl }),
    ];
    expect(await c.tryAcquire('doc', { mode: 'write', ttl: ctx.ttl })).toBeNull();
    await expect(c.acquire('doc', { mode: 'write', ttl: ctx.ttl, waitTimeout: BRIEF_WAIT })).rejects.toBeInstanceOf(
      LockTimeoutError,
    );

    const writing = c.acquire('doc', { mode: 'write', ttl: ctx.ttl, waitTimeout: LONG_WAIT });
    await Promise.all(readers.map((reader) => reader.release()));
    const writer = await writing;
    expect(writer.isHeld).toBe(true);
    expect(await a.tryAcquire('doc', { mode: 'read', ttl: ctx.ttl })).toBeNull();
    expect(await a.tryAcquire('doc', { mode: 'write', ttl: ctx.ttl })).toBeNull();
    await expect(b.acquire('doc', { mode: 'read', ttl: ctx.ttl, waitTimeout: BRIEF_WAIT })).rejects.toBeInstanceOf(
      LockTimeoutError,
    );
    await expect(b.acquire('doc', { mode: 'write', ttl: ctx.ttl, waitTimeout: BRIEF_WAIT })).rejects.toBeInstanceOf(
      LockTimeoutError,
    );

    const reading = a.acquire('doc', { mode: 'read', ttl: ctx.ttl, waitTimeout: LONG_WAIT });
    await writer.release();
    await (await reading).release();
  });

  it("treats 'exclusive' and 'write' as one and the same lock", async () => {
    const [a, b] = [ctx.service(), ctx.service()];
    const exclusive = await a.acquire('doc', { ttl: ctx.ttl });
    expect(await b.tryAcquire('doc', { mode: 'write', ttl: ctx.ttl })).toBeNull();
    expect(await b.tryAcquire('doc', { mode: 'read', ttl: ctx.ttl })).toBeNull();
    const writing = b.acquire('doc', { mode: 'write', ttl: ctx.ttl, waitTimeout: LONG_WAIT });
    await exclusive.release();
    const writer = await writing;
    expect(await a.tryAcquire('doc', { ttl: ctx.ttl })).toBeNull();
    expect(await a.tryAcquire('doc', { mode: 'exclusive', ttl: ctx.ttl })).toBeNull();
    await writer.release();
  });

  it('gives increasing fencing tokens within each mode and across modes, taken one after another', async () => {
    const [a, b] = [ctx.service(), ctx.service()];
    const r1 = await a.acquire('doc', { mode: 'read', ttl: ctx.ttl });
    const r2 = await b.acquire('doc', { mode: 'read', ttl: ctx.ttl });
    expect(r2.fencingToken).toBeGreaterThan(r1.fencingToken);
    await Promise.all([r1.release(), r2.release()]);
    const w1 = await a.acquire('doc', { mode: 'write', ttl: ctx.ttl });
    expect(w1.fencingToken).toBeGreaterThan(r2.fencingToken);
    await w1.release();
    const w2 = await b.acquire('doc', { mode: 'write', ttl: ctx.ttl });
    expect(w2.fencingToken).toBeGreaterThan(w1.fencingToken);
    await w2.release();
    const r3 = await a.acquire('doc', { mode: 'read', ttl: ctx.ttl });
    expect(r3.fencingToken).toBeGreaterThan(w2.fencingToken);
    await r3.release();
    const e = await b.acquire('doc', { ttl: ctx.ttl });
    expect(e.fencingToken).toBeGreaterThan(r3.fencingToken);
    await e.release();

    const s1 = await a.acquire('doc', { permits: 2, ttl: ctx.ttl });
    const s2 = await b.acquire('doc', { permits: 2, ttl: ctx.ttl });
    expect(s2.fencingToken).toBeGreaterThan(s1.fencingToken);
    await s1.release();
    const s3 = await a.acquire('doc', { permits: 2, ttl: ctx.ttl });
    expect(s3.fencingToken).toBeGreaterThan(s2.fencingToken);
    await Promise.all([s2.release(), s3.release()]);
  });
}
