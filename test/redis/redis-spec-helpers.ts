import type { AcquireRequest } from '../../lib/backends/lock-backend.interface';
import { lockRequest as request } from '../support/lock-requests';
import { eventually as pollUntil } from '../support/time';

export const NAMESPACE = 'spec';

export { held } from '../support/lock-requests';

export function lockRequest(key: string, ttl = 10_000, namespace = NAMESPACE): AcquireRequest {
  return request(key, ttl, namespace);
}

/** Polls server-side state (no event exists for it) until `check` passes or `timeoutMs` ends. */
export function eventually(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  return pollUntil(check, 'the server-side condition held', timeoutMs);
}

/** An AbortSignal aborted after `ms` with a recognisable reason; dispose clears its timer. */
export function deadline(ms: number): { signal: AbortSignal; reason: Error; dispose(): void } {
  const controller = new AbortController();
  const reason = new Error(`deadline of ${ms} ms passed`);
  const timer = setTimeout(() => controller.abort(reason), ms);
  return { signal: controller.signal, reason, dispose: () => clearTimeout(timer) };
}
