import { performance } from 'node:perf_hooks';
import { LockBackendError } from '../../../lib/errors';
import { LockService } from '../../../lib/lock.service';
import { since } from '../../support/time';
import type { ContractContext } from '../contract-context';

const WAIT_TIMEOUT = 2_000;
const OPERATION_TIMEOUT = 1_500;
/** Slack for a loaded machine; a hang would blow far past it. */
const MARGIN = 4_000;

export function unreachableCases(ctx: ContractContext): void {
  const { unreachable } = ctx.factory;
  if (!unreachable) return;

  it('with nothing listening, acquire/tryAcquire/isLocked reject with LockBackendError naming backend, address, the call and the connection, in bounded time', async () => {
    const dead = await unreachable();
    ctx.defer(() => dead.close());
    const locks = new LockService(dead.backend, { keyPrefix: ctx.ns, operationTimeout: OPERATION_TIMEOUT });
    ctx.defer(() => locks.close());

    const checks: [string, () => Promise<unknown>, number][] = [
      ['acquire', () => locks.acquire('k', { ttl: 10_000, waitTimeout: WAIT_TIMEOUT }), WAIT_TIMEOUT],
      ['tryAcquire', () => locks.tryAcquire('k', { ttl: 10_000 }), OPERATION_TIMEOUT],
      ['isLocked', () => locks.isLocked('k'), OPERATION_TIMEOUT],
    ];
    for (const [operation, call, bound] of checks) {
      const started = performance.now();
      const error = await call().then(
        () => new Error(`${operation} succeeded against a dead port`),
        (rejection: unknown) => rejection,
      );
      const elapsed = since(started);
      expect({ operation, error }).toEqual({ operation, error: expect.any(LockBackendError) });
      const failure = error as LockBackendError;
      expect(failure.backend).toBe(ctx.factory.backendKind ?? ctx.factory.name);
      expect(failure.address).toContain(String(dead.port));
      expect(failure.message).toContain(String(dead.port));
      // The operation the user called (acquire tries first on some backends), and why nothing answered.
      expect({ operation, named: failure.operation }).toEqual({ operation, named: operation });
      expect({ operation, message: failure.message }).toEqual({
        operation,
        message: expect.stringMatching(/connect/i),
      });
      expect(elapsed).toBeLessThan(bound + MARGIN);
    }

    const closing = performance.now();
    await locks.close();
    expect(since(closing)).toBeLessThan(OPERATION_TIMEOUT + MARGIN);
  });
}
