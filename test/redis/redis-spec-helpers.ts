import { randomUUID } from 'node:crypto';
import type { AcquireRequest, HeldLock, LockGrant } from '../../lib/backends/lock-backend.interface';

export const NAMESPACE = 'spec';

export function lockRequest(key: string, ttl = 10_000, namespace = NAMESPACE): AcquireRequest {
  return { namespace, key, token: randomUUID(), ttl };
}

export function held(request: AcquireRequest, grant: LockGrant): HeldLock {
  return { ...request, fencingToken: grant.fencingToken, state: grant.state };
}

/** Polls server-side state (no event exists for it) until `check` passes or `timeoutMs` ends. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** An AbortSignal aborted after `ms` with a recognisable reason; dispose clears its timer. */
export function deadline(ms: number): { signal: AbortSignal; reason: Error; dispose(): void } {
  const controller = new AbortController();
  const reason = new Error(`deadline of ${ms} ms passed`);
  const timer = setTimeout(() => controller.abort(reason), ms);
  return { signal: controller.signal, reason, dispose: () => clearTimeout(timer) };
}
