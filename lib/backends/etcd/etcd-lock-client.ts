import type { Etcd3 } from 'etcd3';
import { LockBackendError, LockError } from '../../errors';
import { DeletionWatch, watchDeletion, watchEarlierDeletions } from './etcd-deletion-watch';
import { GrantedLease, grantLease, keepAliveMany, keepAliveOnce, revokeLease } from './etcd-lease';
import type { QueueRules, WaitTarget } from './etcd-queue-rules';
import {
  anyContenderRange,
  MAX_TXN_OPS,
  prefixRange,
  readKeysTxn,
  rebindTxn,
  deleteIfOursTxn,
  bytes,
  SORT_ASCEND,
  SORT_BY_CREATE,
  stillOursTxn,
} from './etcd-requests';

export interface Enqueued {
  readonly createRevision: bigint;
  /** Whether we hold at once, read in the same revision as our put; undefined when a retry found our key already put. */
  readonly holds: boolean | undefined;
}

export type Inspection =
  | { readonly present: false }
  /** `blocker` is undefined when we hold now; `revision` is the store revision of the read. */
  | { readonly present: true; readonly blocker: WaitTarget | undefined; readonly revision: bigint };

/**
 * The gRPC deadline of our clean-up calls (deletes, revokes, whose wait is CLEANUP_DEADLINE_MS): how long the call
 * itself may run. Far past our own wait, so a stall of etcd shorter than this never trips etcd3's breaker; finite,
 * because gRPC does not end a call when its channel is closed, and a delete sent to a server that never answers
 * (a black-holed network) would otherwise keep a closed process alive for ever.
 */
export const CLEANUP_CALL_LIFETIME_MS = 30_000;

/**
 * The lock's requests on etcd3's raw clients (`kv`, `leaseClient`, the shared watch stream), each one round
 * trip. Errors come back as thrown by etcd3; callers map them with `toEtcdBackendError`. Callers bound their waits
 * themselves: a gRPC deadline that passes counts as a failed host for etcd3 (see CLEANUP_DEADLINE_MS), so only
 * the clean-up calls (deletes, revokes) carry one, a long one (CLEANUP_CALL_LIFETIME_MS), so that they end.
 */
export class EtcdLockClient {
  constructor(
    readonly client: Etcd3,
    readonly address: string,
  ) {}

  grant(ttlSeconds: number): Promise<GrantedLease> {
    return grantLease(this.client.leaseClient, ttlSeconds);
  }

  keepAlive(leaseId: string, timeoutMs: number): Promise<number> {
    return keepAliveOnce(this.client.leaseClient, leaseId, timeoutMs);
  }

  keepAliveMany(leaseIds: readonly string[], timeoutMs: number): Promise<Map<string, number>> {
    return keepAliveMany(this.client.leaseClient, leaseIds, timeoutMs);
  }

  /** For each key: its create revision and lease, or undefined when it is gone. One txn per 128 keys. */
  async readKeys(keys: readonly string[]): Promise<({ createRevision: string; leaseId: string } | undefined)[]> {
    const chunks: string[][] = [];
    for (let i = 0; i < keys.length; i += MAX_TXN_OPS) chunks.push(keys.slice(i, i + MAX_TXN_OPS));
    const responses = await Promise.all(chunks.map((chunk) => this.client.kv.txn(readKeysTxn(chunk))));
    return responses.flatMap((response) =>
      response.responses.map((op) => {
        const kv = op.response_range?.kvs[0];
        return kv ? { createRevision: String(kv.create_revision), leaseId: String(kv.lease) } : undefined;
      }),
    );
  }

  revoke(leaseId: string): Promise<boolean> {
    return revokeLease(this.client.leaseClient, leaseId, cleanupCallOptions());
  }

  async enqueue(rules: QueueRules, key: string, token: string, leaseId: string): Promise<Enqueued> {
    const response = await this.client.kv.txn(rules.enqueueTxn(key, token, leaseId));
    if (response.succeeded) {
      const createRevision = BigInt(response.header.revision);
      return { createRevision, holds: rules.holdsAtOnce(response) };
    }
    // The key embeds a lease id granted a moment ago: if it exists on that lease, an earlier attempt of this
    // very txn put it (etcd3 retries a call whose answer was lost).
    const existing = response.responses[0]?.response_range?.kvs[0];
    if (existing && String(existing.lease) === leaseId)
      return { createRevision: BigInt(existing.create_revision), holds: undefined };
    throw new Error(`etcd refused to create the contender key ${key}: it exists and is not on our lease`);
  }

  async inspect(rules: QueueRules, key: string, createRevision: bigint): Promise<Inspection> {
    const response = await this.client.kv.txn(rules.inspectTxn(key, createRevision));
    if (!response.succeeded) return { present: false };
    return {
      present: true,
      blocker: rules.blocker(response, key, createRevision),
      revision: BigInt(response.header.revision),
    };
  }

  async stillOurs(key: string, createRevision: string, leaseId: string): Promise<boolean> {
    return (await this.client.kv.txn(stillOursTxn(key, createRevision, leaseId))).succeeded;
  }

  async rebind(key: string, createRevision: string, token: string, newLeaseId: string): Promise<boolean> {
    return (await this.client.kv.txn(rebindTxn(key, createRevision, token, newLeaseId))).succeeded;
  }

  /** Deletes the key if it still has `createRevision`; false when it was gone or someone else's. */
  async deleteIfOurs(key: string, createRevision: string): Promise<boolean> {
    return (await this.client.kv.txn(deleteIfOursTxn(key, createRevision), cleanupCallOptions())).succeeded;
  }

  /** Deletes the key whatever its revision: only for a key whose name embeds our own lease id. */
  async deleteKey(key: string): Promise<boolean> {
    return Number((await this.client.kv.deleteRange({ key: bytes(key) }, cleanupCallOptions())).deleted) > 0;
  }

  /** Every key under `prefix`, oldest first, with its value, create revision and lease. */
  async listContenders(
    prefix: string,
  ): Promise<{ key: string; value: string; createRevision: string; leaseId: string }[]> {
    const response = await this.client.kv.range({
      ...prefixRange(prefix),
      sort_target: SORT_BY_CREATE,
      sort_order: SORT_ASCEND,
    });
    return response.kvs.map((kv) => ({
      key: kv.key.toString('utf8'),
      value: kv.value.toString('utf8'),
      createRevision: String(kv.create_revision),
      leaseId: String(kv.lease),
    }));
  }

  /** Seconds the lease has left, <= 0 when it is gone. */
  async leaseTimeToLive(leaseId: string): Promise<number> {
    return Number((await this.client.leaseClient.leaseTimeToLive({ ID: leaseId })).TTL);
  }

  async anyContender(prefix: string): Promise<boolean> {
    return Number((await this.client.kv.range(anyContenderRange(prefix))).count) > 0;
  }

  /** Watches, from the server's current revision on, for what `target` waits for. */
  watchDeletion(target: WaitTarget): DeletionWatch {
    return target.type === 'key'
      ? watchDeletion(this.client, target.key)
      : watchEarlierDeletions(this.client, target.prefix, target.before, target.count);
  }
}

/** Maps an etcd3 failure to a LockBackendError naming the address; our own errors pass through. */
export function toEtcdBackendError(address: string, operation: string, error: unknown): unknown {
  if (error instanceof LockError) return error;
  const kind = (error as Error | undefined)?.constructor?.name ?? 'Error';
  const message = error instanceof Error ? error.message : String(error);
  const why = kind === BROKEN_CIRCUIT ? ` (${BROKEN_CIRCUIT_MEANS})` : '';
  return new LockBackendError('etcd', address, operation, `${kind}: ${message}${why}`, { cause: error });
}

/** etcd3's error once its circuit breaker (cockatiel's) opened: its own message does not say what that means. */
const BROKEN_CIRCUIT = 'BrokenCircuitError';
const BROKEN_CIRCUIT_MEANS =
  'etcd3 refuses calls for a few seconds after several in a row could not reach the server: ' +
  'the connection was refused, unavailable or timed out';

/** A clean-up call's own gRPC deadline (CLEANUP_CALL_LIFETIME_MS). */
function cleanupCallOptions(): { deadline: number } {
  return { deadline: Date.now() + CLEANUP_CALL_LIFETIME_MS };
}
