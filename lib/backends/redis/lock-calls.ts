import type { AcquireRequest, HeldLock } from '../lock-backend.interface';
import { ACQUIRE_READ_SCRIPT } from './acquire-read.lua';
import { ACQUIRE_SEMAPHORE_SCRIPT } from './acquire-semaphore.lua';
import { ACQUIRE_SCRIPT } from './acquire.lua';
import { EXTEND_SHARED_SCRIPT } from './extend-shared.lua';
import { EXTEND_SCRIPT } from './extend.lua';
import { IS_LOCKED_SCRIPT } from './is-locked.lua';
import { LEAVE_HANDOFF_SCRIPT, LEAVE_LOCK_SCRIPT, LEAVE_SEMAPHORE_SCRIPT } from './leave.lua';
import { DEFAULT_FENCE_RETENTION } from './fence-retention';
import { RAISE_FENCE_SCRIPT } from './raise-fence.lua';
import { redisLockKey, redisLockKeys, redisSemaphoreKeys } from './redis-keys';
import type { RedisScript, ScriptPort } from './redis-script';
import { RELEASE_READ_SCRIPT } from './release-read.lua';
import { RELEASE_SEMAPHORE_SCRIPT } from './release-semaphore.lua';
import { RELEASE_SCRIPT } from './release.lua';

/**
 * Which script (with which keys and arguments) each operation runs, per lock kind. Shared by the single-server
 * backend and Redlock, which runs the same calls on every instance; both also batch them into pipelines.
 */
export interface ScriptCall {
  readonly script: RedisScript;
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
  /** The hash tag all `keys` share: the cluster slot is computed from it. */
  readonly tag: string;
}

export function runCall(client: ScriptPort, call: ScriptCall): Promise<unknown> {
  return call.script.run(client, call.keys, call.args);
}

export type LockKind = 'write' | 'read' | 'semaphore';

/** Exclusive and write are the same lock; permits make a semaphore (the core never combines them with read). */
export function kindOf(request: Pick<AcquireRequest, 'mode' | 'permits'>): LockKind {
  if (request.permits !== undefined) return 'semaphore';
  return request.mode === 'read' ? 'read' : 'write';
}

/**
 * How a busy waiter waits: 'handoff' = a FIFO entry that a release grants the lock to (fair mode, writers);
 * 'queue' = a FIFO entry woken by a message (fair mode, readers and semaphores); 'intent' = a writer's intent
 * that holds new readers back (non-fair mode); 'none' = it just retries (tryAcquire, non-fair readers and
 * semaphores).
 */
export type WaitStyle = 'none' | 'intent' | 'queue' | 'handoff';

export function waitStyle(request: Pick<AcquireRequest, 'mode' | 'permits'>, fifo: boolean): WaitStyle {
  const kind = kindOf(request);
  if (fifo) return kind === 'write' ? 'handoff' : 'queue';
  return kind === 'write' ? 'intent' : 'none';
}

/**
 * The PX an exclusive/write grant gets on the server. One place, because a handoff waiter's queue entry
 * carries it too (the release grants with it), and leaveCall must name that entry exactly.
 */
export function grantPx(request: Pick<AcquireRequest, 'ttl' | 'lockDelay'>): number {
  return serverTtl(request.ttl, request);
}

/** The pub/sub channel that announces releases of this request's lock (or semaphore). */
export function channelOf(request: Pick<AcquireRequest, 'namespace' | 'key' | 'permits'>): string {
  return request.permits !== undefined
    ? redisSemaphoreKeys(request.namespace, request.key).channel
    : redisLockKeys(request.namespace, request.key).channel;
}

/**
 * How long in ms the server keeps an entry granted or extended for `ttl`: the ttl plus the request's lock-delay.
 * Our validity stays measured from `ttl` alone (validity.ts), so the holder reports the lock lost at the end of
 * the ttl while nobody else can take the key until the delay has passed too. A release deletes it at once.
 */
export function serverTtl(ttl: number, request: Pick<AcquireRequest, 'lockDelay'>): number {
  return request.lockDelay ? ttl + request.lockDelay : ttl;
}

const ENTRY_PREFIX: Record<LockKind, string> = { write: 'w', read: 'r', semaphore: 's' };

/**
 * Where a handoff waiter's grant goes (see LUA_HANDOFF): its process's grant channel, and whether a PUBLISH
 * that reached nobody there proves the process gone (`check`: not on Redis Cluster, which counts per node).
 */
export interface HandoffTarget {
  readonly channel: string;
  readonly check: boolean;
}

function handoffSuffix(target: HandoffTarget | undefined): string {
  if (!target) throw new TypeError('a handoff waiter needs its grant channel');
  return `${target.check ? '1' : '0'} ${target.channel}`;
}

function queueEntry(request: AcquireRequest, style: WaitStyle, target?: HandoffTarget): string {
  if (style === 'handoff') return `g${request.token} ${grantPx(request)} ${handoffSuffix(target)}`;
  return ENTRY_PREFIX[kindOf(request)] + request.token;
}

/**
 * `fenceRetention`: how long in ms the fencing counter outlives the lock's ttl (see LUA_NEXT_FENCE).
 * `waits`: the caller waits when busy (acquire, not tryAcquire), so a busy holder's release must publish.
 */
export function acquireCall(
  request: AcquireRequest,
  style: WaitStyle,
  waiterTtl: number,
  fenceRetention: number,
  waits: boolean,
  handoff?: HandoffTarget,
): ScriptCall {
  const kind = kindOf(request);
  // A waiting reader has no entry to register outside FIFO mode, but still marks the writer it waits for.
  const join = style !== 'none' ? style : waits && kind === 'read' ? 'wait' : '';
  if (kind === 'semaphore') {
    const keys = redisSemaphoreKeys(request.namespace, request.key);
    return {
      script: ACQUIRE_SEMAPHORE_SCRIPT,
      keys: [keys.holders, keys.fence, keys.queue, keys.queueExpiry],
      args: [request.token, serverTtl(request.ttl, request), request.permits!, join, waiterTtl, fenceRetention],
      tag: keys.tag,
    };
  }
  const keys = redisLockKeys(request.namespace, request.key);
  if (kind === 'read') {
    return {
      script: ACQUIRE_READ_SCRIPT,
      keys: [keys.lock, keys.fence, keys.readers, keys.writersWaiting, keys.queue, keys.queueExpiry],
      args: [request.token, serverTtl(request.ttl, request), join, waiterTtl, fenceRetention],
      tag: keys.tag,
    };
  }
  const px = grantPx(request);
  // A try sends only the keys and arguments the script reads then: each one costs on both ends (issue 18).
  if (join === '') {
    return {
      script: ACQUIRE_SCRIPT,
      keys: [keys.lock, keys.fence, keys.readers, keys.queue, keys.queueExpiry],
      args: [request.token, px, px + fenceRetention],
      tag: keys.tag,
    };
  }
  return {
    script: ACQUIRE_SCRIPT,
    keys: [keys.lock, keys.fence, keys.readers, keys.queue, keys.queueExpiry, keys.writersWaiting],
    args:
      join === 'handoff'
        ? [request.token, px, px + fenceRetention, join, waiterTtl, handoffSuffix(handoff)]
        : [request.token, px, px + fenceRetention, join, waiterTtl],
    tag: keys.tag,
  };
}

/** `token`: what the server stores as the owner (the Redis backend adds the holder id to the lock's token). */
export function extendCall(lock: HeldLock, ttl: number, token = lock.token): ScriptCall {
  const kind = kindOf(lock);
  const px = serverTtl(ttl, lock);
  if (kind === 'semaphore') {
    const keys = redisSemaphoreKeys(lock.namespace, lock.key);
    return { script: EXTEND_SHARED_SCRIPT, keys: [keys.holders], args: [token, px], tag: keys.tag };
  }
  if (kind === 'read') {
    const keys = redisLockKeys(lock.namespace, lock.key);
    return { script: EXTEND_SHARED_SCRIPT, keys: [keys.readers], args: [token, px], tag: keys.tag };
  }
  // The common case, once per held lock and renewal: build only the key it touches.
  const { lock: key, tag } = redisLockKey(lock.namespace, lock.key);
  return { script: EXTEND_SCRIPT, keys: [key], args: [token, px], tag };
}

/**
 * Also used for grants nobody will hold (aborted or too late), hence an AcquireRequest is enough.
 * `fifo`: the backend runs FIFO queues, so the release hands the lock to the queue's head (or wakes it);
 * without, it only publishes '*'. `fenceRetention`: for the fencing token of such a handoff.
 */
export function releaseCall(
  lock: AcquireRequest,
  fifo: boolean,
  token = lock.token,
  fenceRetention = DEFAULT_FENCE_RETENTION,
): ScriptCall {
  const kind = kindOf(lock);
  const queues = fifo ? '1' : '';
  if (kind === 'semaphore') {
    const keys = redisSemaphoreKeys(lock.namespace, lock.key);
    return {
      script: RELEASE_SEMAPHORE_SCRIPT,
      keys: [keys.holders, keys.queue, keys.queueExpiry],
      args: [token, keys.channel, lock.permits!, queues],
      tag: keys.tag,
    };
  }
  const keys = redisLockKeys(lock.namespace, lock.key);
  if (kind === 'read') {
    return {
      script: RELEASE_READ_SCRIPT,
      keys: [keys.readers, keys.queue, keys.queueExpiry],
      args: [token, keys.channel, queues],
      tag: keys.tag,
    };
  }
  // Without queues the script gets only the lock key, the token and the channel: fewer keys and arguments are a
  // measurable share of its cost.
  return fifo
    ? {
        script: RELEASE_SCRIPT,
        keys: [keys.lock, keys.queue, keys.queueExpiry, keys.fence],
        args: [token, keys.channel, fenceRetention],
        tag: keys.tag,
      }
    : { script: RELEASE_SCRIPT, keys: [keys.lock], args: [token, keys.channel], tag: keys.tag };
}

/**
 * Takes a waiter's queue entry or writer's intent back; `undefined` when it has none to take back. A handoff
 * waiter's leave also releases a grant it got meanwhile (see LEAVE_HANDOFF_SCRIPT).
 */
export function leaveCall(
  request: AcquireRequest,
  style: WaitStyle,
  fenceRetention = DEFAULT_FENCE_RETENTION,
  handoff?: HandoffTarget,
): ScriptCall | undefined {
  if (style === 'none') return undefined;
  if (style === 'handoff') {
    const keys = redisLockKeys(request.namespace, request.key);
    return {
      script: LEAVE_HANDOFF_SCRIPT,
      keys: [keys.queue, keys.queueExpiry, keys.lock, keys.fence, keys.readers],
      args: [queueEntry(request, style, handoff), keys.channel, request.token, fenceRetention],
      tag: keys.tag,
    };
  }
  if (kindOf(request) === 'semaphore') {
    const keys = redisSemaphoreKeys(request.namespace, request.key);
    return {
      script: LEAVE_SEMAPHORE_SCRIPT,
      keys: [keys.holders, keys.queue, keys.queueExpiry],
      args: [queueEntry(request, style), keys.channel, request.permits!],
      tag: keys.tag,
    };
  }
  const keys = redisLockKeys(request.namespace, request.key);
  return {
    script: LEAVE_LOCK_SCRIPT,
    keys: [keys.writersWaiting, keys.queue, keys.queueExpiry],
    args: [queueEntry(request, style), keys.channel, style],
    tag: keys.tag,
  };
}

export function isLockedCall(namespace: string, key: string): ScriptCall {
  const keys = redisLockKeys(namespace, key);
  return { script: IS_LOCKED_SCRIPT, keys: [keys.lock, keys.readers], args: [], tag: keys.tag };
}

export function raiseFenceCall(
  request: Pick<AcquireRequest, 'namespace' | 'key' | 'ttl'>,
  token: bigint,
  fenceRetention: number,
): ScriptCall {
  const keys = redisLockKeys(request.namespace, request.key);
  return {
    script: RAISE_FENCE_SCRIPT,
    keys: [keys.fence],
    args: [token.toString(), request.ttl, fenceRetention],
    tag: keys.tag,
  };
}
