import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { AcquireRequest } from '../../lib/backends/lock-backend.interface';
import type { ContractContext } from '../contract/contract-context';
import { held } from '../support/lock-requests';
import { within } from '../support/time';
import type { TestZooKeeperServer } from '../support/zookeeper-server';
import { FaultProxy } from './fault-proxy';
import { LineProcess } from '../support/line-process';
import { CONTRACT_SESSION_TIMEOUT, connectZooKeeperBackend } from './zookeeper-contract-factory';

/**
 * The contract cases whose shared form assumes ttl liveness (a holder that stops renewing loses its lock after
 * its ttl), in the form that applies to a session backend: a lock lives as long as its holder's session, and
 * the session ends one session timeout after the server last heard from the holder. Each one checks the
 * same promise as the shared case it stands in for; the spec registers them in place of those.
 */

const ROOT = join(__dirname, '..', '..');
const TS_REGISTER = join(ROOT, 'test', 'support', 'ts-register.js');
/** Slack for a loaded two-core machine, as in the shared crash case; expiry is also rounded up to a tick. */
const MARGIN = 5_000;

function request(ctx: ContractContext, key: string, ttl: number): AcquireRequest {
  return { namespace: ctx.ns, key, token: randomUUID(), ttl };
}

/** Stands in for crash.cases: the holder is another OS process, and nothing of it runs after the kill. */
export function sessionCrashCases(ctx: ContractContext, server: () => TestZooKeeperServer): void {
  it(`a SIGKILLed holder process frees the lock within its session timeout (${CONTRACT_SESSION_TIMEOUT} ms) without any cleanup`, async () => {
    const holder = LineProcess.spawn(process.execPath, [
      '--require',
      TS_REGISTER,
      join(__dirname, 'fixtures', 'hold-lock.ts'),
      server().connectionString,
      ctx.ns,
      'crash',
      String(CONTRACT_SESSION_TIMEOUT),
      '3000',
    ]);
    ctx.defer(() => holder.kill('SIGKILL'));
    const heldToken = BigInt((await holder.nextLine('HELD', 40_000)).split(' ')[1]);
    await holder.kill('SIGKILL');
    const killedAt = performance.now();

    const locks = ctx.service();
    // The server has not noticed yet: the dead holder's session still owns the lock.
    expect(await locks.tryAcquire('crash', { ttl: 10_000 })).toBeNull();
    const lock = await locks.acquire('crash', { ttl: 10_000, waitTimeout: CONTRACT_SESSION_TIMEOUT + MARGIN });
    expect(performance.now() - killedAt).toBeLessThan(CONTRACT_SESSION_TIMEOUT + MARGIN);
    expect(lock.fencingToken > heldToken).toBe(true);
    await lock.release();
  });
}

/**
 * Stands in for ownership.cases' first case ("after the holder expired ..."). An idle holder does not expire
 * on ZooKeeper: its client keeps the session alive. What expires is a session the server stops hearing
 * from, so the holder's network is cut (through a proxy) until its session is gone.
 */
export function sessionOwnershipCases(ctx: ContractContext, server: () => TestZooKeeperServer): void {
  it("after the holder's session expired, the next holder waited out its validity, and the old owner can neither extend nor release it", async () => {
    const proxy = await FaultProxy.start(server().port);
    ctx.defer(() => proxy.close());
    const connectionA = connectZooKeeperBackend(proxy.connectionString);
    ctx.defer(() => connectionA.close());
    const a = connectionA.backend;
    const b = ctx.connect().backend;
    const requestA = request(ctx, 'owned', ctx.ttl);
    const grantA = await a.tryAcquire(requestA);
    expect(grantA).not.toBeNull();
    const heldA = held(requestA, grantA!);

    proxy.cut();
    const requestB = request(ctx, 'owned', 30_000);
    const grantB = await b.acquire(requestB, AbortSignal.timeout(CONTRACT_SESSION_TIMEOUT + 15_000));
    const grantedAt = performance.now();
    const heldB = held(requestB, grantB);
    proxy.restore();

    expect(grantedAt).toBeGreaterThanOrEqual(grantA!.validUntil);
    expect(grantB.fencingToken > grantA!.fencingToken).toBe(true);
    expect(await a.extend(heldA, 30_000)).toBeNull();
    expect(await a.release(heldA)).toBe(false);
    // A is back with a new session and sees B's lock.
    expect(await a.isLocked(ctx.ns, 'owned')).toBe(true);

    const extended = await b.extend(heldB, 30_000);
    expect(extended).not.toBeNull();
    expect(extended!).toBeGreaterThan(performance.now());
    expect(await b.release(heldB)).toBe(true);
    expect(await b.isLocked(ctx.ns, 'owned')).toBe(false);
    expect(await b.release(heldB)).toBe(false);
  });
}

/** Stands in for lifecycle.cases, whose forked worker connects through connectBackend (no 'zookeeper' there yet). */
export function sessionLifecycleCases(ctx: ContractContext, server: () => TestZooKeeperServer): void {
  it('after close() nothing stays open: a process that acquired, renewed, waited, timed out, closed everything (one backend before it connected) exits by itself', async () => {
    const worker = LineProcess.spawn(process.execPath, [
      '--require',
      TS_REGISTER,
      join(__dirname, 'fixtures', 'lifecycle.ts'),
      server().connectionString,
      ctx.ns,
      String(ctx.ttl),
    ]);
    ctx.defer(() => worker.kill('SIGKILL'));
    await worker.nextLine('DONE', 45_000);
    const { code } = await within(
      worker.exited,
      10_000,
      `the process exiting by itself after closing everything (output: ${worker.output})`,
    );
    expect(code).toBe(0);
  });
}
