import type { ICompare, IRangeRequest, IRequestOp, ITxnRequest, ITxnResponse } from 'etcd3';
import { prefixRangeEnd } from './etcd-key-layout';

/*
 * The raw KV requests the lock is made of. Numeric enum values come from etcd's rpc.proto: etcd3's own
 * enums are runtime values, and this file may only import its types.
 */
const COMPARE_EQUAL = 0;
const TARGET_CREATE = 1;
const TARGET_LEASE = 4;
export const SORT_ASCEND = 1;
export const SORT_DESCEND = 2;
export const SORT_BY_CREATE = 2;

export const bytes = (key: string): Buffer => Buffer.from(key, 'utf8');

export function createRevisionIs(key: string, revision: string | number | bigint): ICompare {
  return { key: bytes(key), target: TARGET_CREATE, result: COMPARE_EQUAL, create_revision: revision.toString() };
}

function leaseIs(key: string, leaseId: string): ICompare {
  return { key: bytes(key), target: TARGET_LEASE, result: COMPARE_EQUAL, lease: leaseId };
}

/** The keys from `start` (inclusive) to `end` (exclusive). */
export type KeyRange = Pick<IRangeRequest, 'key' | 'range_end'>;

export function prefixRange(prefix: string): KeyRange {
  const key = bytes(prefix);
  return { key, range_end: prefixRangeEnd(key) };
}

/**
 * Puts our contender key on our lease if it does not exist yet (the key embeds a lease id granted a moment
 * ago, so it cannot), and runs `reads` in the same revision: each queue kind reads what tells it whether
 * it holds at once. The put comes first, so the txn's revision is our key's create revision.
 */
export function enqueueTxn(key: string, token: string, leaseId: string, reads: readonly IRequestOp[]): ITxnRequest {
  const own = bytes(key); // one buffer for the three uses: this runs on every acquire
  return {
    compare: [{ key: own, target: TARGET_CREATE, result: COMPARE_EQUAL, create_revision: '0' }],
    success: [{ request_put: { key: own, value: bytes(token), lease: leaseId } }, ...reads],
    // The key exists: etcd3 retried this txn after an attempt whose answer was lost had put it. Read it.
    failure: [{ request_range: { key: own, keys_only: true } }],
  };
}

/**
 * Checks that our key is still the one we created (lease expiry deletes it; etcd#11456 is about believing
 * otherwise) and runs `reads` in the same revision, to find who is ahead of us.
 */
export function inspectTxn(key: string, createRevision: bigint, reads: IRequestOp[]): ITxnRequest {
  return { compare: [createRevisionIs(key, createRevision)], success: reads, failure: [] };
}

/**
 * The contender in `range` created last before `createRevision` (Go's `WithLastCreate` +
 * `WithMaxCreateRev`). The server filters before it applies the limit.
 */
export function lastCreatedBefore(range: KeyRange, createRevision: bigint): IRequestOp {
  return {
    request_range: {
      ...range,
      max_create_revision: (createRevision - 1n).toString(),
      sort_target: SORT_BY_CREATE,
      sort_order: SORT_DESCEND,
      limit: 1,
      keys_only: true,
    },
  };
}

/** How many keys `range` holds: etcd counts them in its index, reading and returning none. */
export function countRange(range: KeyRange): IRequestOp {
  return { request_range: { ...range, count_only: true } };
}

/** The count a txn's `index`-th operation (a countRange) read; Infinity if it did not run, so nobody holds on it. */
export function rangeCount(response: ITxnResponse, index: number): number {
  return Number(response.responses[index]?.response_range?.count ?? Infinity);
}

/** Succeeds only while our key exists, created at our revision, on the given lease. */
export function stillOursTxn(key: string, createRevision: string, leaseId: string): ITxnRequest {
  return { compare: [createRevisionIs(key, createRevision), leaseIs(key, leaseId)], success: [], failure: [] };
}

/**
 * Moves our key to another lease. A put keeps the create revision, so ownership and fencing token stay.
 * Only the create revision is compared: if an earlier rebind's outcome was unknown (a timeout), a retry
 * still finds our key, whichever lease it is on now.
 */
export function rebindTxn(key: string, createRevision: string, token: string, newLeaseId: string): ITxnRequest {
  return {
    compare: [createRevisionIs(key, createRevision)],
    success: [{ request_put: { key: bytes(key), value: bytes(token), lease: newLeaseId } }],
    failure: [],
  };
}

/** Deletes our key if it still has its create revision: a release that must not touch the rest of its lease. */
export function deleteIfOursTxn(key: string, createRevision: string): ITxnRequest {
  return {
    compare: [createRevisionIs(key, createRevision)],
    success: [{ request_delete_range: { key: bytes(key) } }],
    failure: [],
  };
}

/** Counts contenders under the lock's prefix; there is an owner whenever there is any. */
export function anyContenderRange(prefix: string): IRangeRequest {
  return { ...prefixRange(prefix), count_only: true };
}

/** etcd's default --max-txn-ops: a txn may hold at most this many operations. */
export const MAX_TXN_OPS = 128;

/** Reads many keys in one revision (create revision and lease of each), for checking a batch of held locks. */
export function readKeysTxn(keys: readonly string[]): ITxnRequest {
  return {
    compare: [],
    success: keys.map((key) => ({ request_range: { key: bytes(key), keys_only: true } })),
    failure: [],
  };
}
