import type { AcquireRequest } from '../lock-backend.interface';
import { WAITED_SUFFIX } from './lua-snippets';

/**
 * What we store on the server as the owner token: `<token>|<permits or empty>|<holder id>`. Every script
 * compares the whole string, so ownership is as strict as before, and inspect() can tell operators who holds
 * a key without a second write. Whitespace is replaced because release messages list tokens separated by spaces.
 */
export function storedToken(lock: { token: string; holder?: string; permits?: number }): string {
  if (lock.holder === undefined || lock.token.includes('|')) return lock.token;
  return `${lock.token}|${lock.permits ?? ''}|${storedHolder(lock.holder)}`;
}

/** The request with its stored token; built field by field, as a spread of optional fields is slow in V8. */
export function withStoredToken(request: AcquireRequest): AcquireRequest {
  const token = storedToken(request);
  if (token === request.token) return request;
  return {
    namespace: request.namespace,
    key: request.key,
    token,
    ttl: request.ttl,
    mode: request.mode,
    holder: request.holder,
    permits: request.permits,
    lockDelay: request.lockDelay,
  };
}

// A process mostly uses one holder id: remember the last one rather than run the regex on every acquire and release.
let lastHolder = '';
let lastStoredHolder = '';

function storedHolder(holder: string): string {
  if (holder !== lastHolder) {
    lastStoredHolder = holder.replace(/\s/g, '_');
    lastHolder = holder;
  }
  return lastStoredHolder;
}

/** A held lock's value may carry the waiter marker (LUA_MARK_WAITED); it is not part of the holder id. */
function stripWaitedSuffix(stored: string): string {
  return stored.endsWith(WAITED_SUFFIX) ? stored.slice(0, -WAITED_SUFFIX.length) : stored;
}

export function holderOf(stored: string): { holder?: string; permits?: number } {
  const [, permits, ...holder] = stripWaitedSuffix(stored).split('|');
  if (holder.length === 0) return {};
  return { holder: holder.join('|'), ...(permits && { permits: Number(permits) }) };
}
