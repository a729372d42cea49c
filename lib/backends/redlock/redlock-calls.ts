import type { AcquireRequest } from '../lock-backend.interface';
import { kindOf, type ScriptCall, serverTtl } from '../redis/lock-calls';
import { redisLockKeys, type RedisLockKeys } from '../redis/redis-keys';
import { REDLOCK_ACQUIRE_READ_SCRIPT, REDLOCK_ACQUIRE_SCRIPT } from './redlock-acquire.lua';
import {
  QUIET_RELEASE,
  REDLOCK_LEAVE_SCRIPT,
  REDLOCK_RELEASE_READ_SCRIPT,
  REDLOCK_RELEASE_SCRIPT,
} from './redlock-release.lua';

/**
 * The calls of Redlock's own scripts (acquire, release, leave: the ones that keep its waiter list). Extend,
 * isLocked and the fence raise are the single-server backend's calls (lib/backends/redis/lock-calls.ts).
 */
export interface RedlockKeys extends RedisLockKeys {
  /** ZSET waiter entry -> ticket (see LUA_REDLOCK_WAITERS). */
  readonly waiters: string;
  /** ZSET waiter entry -> expiry (server ms). */
  readonly waitersExpiry: string;
  /** The writer at the head that reserved the next turn (its entry), for a handoff window after the release. */
  readonly reservation: string;
}

/**
 * How long in ms a release keeps the lock for the waiter that reserved it (LUA_REDLOCK_WAITERS): long enough
 * for the wake message and its acquire even on a loaded machine, short enough that a head that died costs
 * little per release (every other waiter retries after it, on its own, and the entry expires after waiterTtl).
 */
export const HANDOFF_WINDOW_MS = 100;

export function redlockKeys(namespace: string, key: string): RedlockKeys {
  const keys = redisLockKeys(namespace, key);
  const waiters = `${keys.lock}:waiters`;
  return { ...keys, waiters, waitersExpiry: `${waiters}:expiry`, reservation: `${waiters}:next` };
}

/** How a waiter is known on the instances: its entry and its place in line. */
export interface WaiterTicket {
  /** The waiter's clock (ms) when it began to wait: the same on every instance, so they order waiters alike. */
  readonly ticket: number;
  /** How long in ms its entry outlives its last refresh. */
  readonly waiterTtl: number;
}

export function waiterEntry(request: AcquireRequest): string {
  return (kindOf(request) === 'read' ? 'r' : 'w') + request.token;
}

/** `waiter`: the caller waits when busy (acquire); without, a busy answer leaves nothing behind (tryAcquire). */
export function redlockAcquireCall(
  request: AcquireRequest,
  fenceRetention: number,
  waiter: WaiterTicket | undefined,
): ScriptCall {
  const keys = redlockKeys(request.namespace, request.key);
  return {
    script: kindOf(request) === 'read' ? REDLOCK_ACQUIRE_READ_SCRIPT : REDLOCK_ACQUIRE_SCRIPT,
    keys: [keys.lock, keys.fence, keys.readers, keys.waiters, keys.waitersExpiry, keys.reservation],
    args: [
      request.token,
      serverTtl(request.ttl, request),
      waiter ? waiter.ticket : '',
      waiter?.waiterTtl ?? 0,
      fenceRetention,
      HANDOFF_WINDOW_MS,
    ],
    tag: keys.tag,
  };
}

/**
 * Releases a held lock, or a grant nobody will hold. `requeue`: the caller is a waiter giving back a partial
 * grant; it is put back in line at its place on that instance. 'quietly': a grant that came after we had won
 * the round elsewhere; only the key goes (QUIET_RELEASE).
 */
export function redlockReleaseCall(request: AcquireRequest, requeue?: WaiterTicket | 'quietly'): ScriptCall {
  const keys = redlockKeys(request.namespace, request.key);
  const back =
    requeue === 'quietly'
      ? [QUIET_RELEASE]
      : requeue
        ? [waiterEntry(request), requeue.ticket, requeue.waiterTtl]
        : [''];
  const read = kindOf(request) === 'read';
  return {
    script: read ? REDLOCK_RELEASE_READ_SCRIPT : REDLOCK_RELEASE_SCRIPT,
    keys: [read ? keys.readers : keys.lock, keys.waiters, keys.waitersExpiry, keys.reservation],
    args: [request.token, keys.channel, HANDOFF_WINDOW_MS, ...back],
    tag: keys.tag,
  };
}

export function redlockLeaveCall(request: AcquireRequest): ScriptCall {
  const keys = redlockKeys(request.namespace, request.key);
  return {
    script: REDLOCK_LEAVE_SCRIPT,
    keys: [keys.lock, keys.waiters, keys.waitersExpiry, keys.reservation],
    args: [waiterEntry(request), keys.channel],
    tag: keys.tag,
  };
}
