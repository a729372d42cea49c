import type { ICompare, IRangeRequest, IRequestOp, ITxnRequest } from 'etcd3';
import { prefixRangeEnd } from './etcd-key-layout';

/*
 * The raw KV requests the lock is made of. Numeric enum values come from etcd's rpc.proto: etcd3's own
 * enums are runtime values, and this file may only import its types.
 */
const COMPARE_EQUAL = 0;
const TARGET_CREATE = 1;
const TARGET_LEASE = 4;
const SORT_ASCEND = 1;
const SORT_DESCEND = 2;
const SORT_BY_CREATE = 2;

const bytes = (key: string): Buffer => Buffer.from(key, 'utf8');

function createRevisionIs(key: string, revision: string | number): ICompare {
  return { key: bytes(key), target: TARGET_CREATE, result: COMPARE_EQUAL, create_revision: revision };
}

function leaseIs(key: string, leaseId: string): ICompare {
  return { key: bytes(key), target: TARGET_LEASE, result: COMPARE_EQUAL, lease: leaseId };
}

function prefixRange(prefix: string): Pick<IRangeRequest, 'key' | 'range_end'> {
  const key = bytes(prefix);
  return { key, range_end: prefixRangeEnd(key) };
}

/** Go's `WithFirstCreate()`: the contender with the lowest create revision, i.e. the owner. */
function ownerOf(prefix: string): IRequestOp {
  return {
    request_range: { ...prefixRange(prefix), sort_target: SORT_BY_CREATE, sort_order: SORT_ASCEND, limit: 1, keys_only: true },
  };
}

/**
 * Joins the queue the way Go's Mutex does: put our key on our lease if it does not exist yet, and in the
 * same revision read who owns the lock.
 */
export function enqueueTxn(prefix: string, key: string, token: string, leaseId: string): ITxnRequest {
  return {
    compare: [createRevisionIs(key, 0)],
    success: [{ request_put: { key: bytes(key), value: bytes(token), lease: leaseId } }, ownerOf(prefix)],
    failure: [],
  };
}

/**
 * Checks that our key is still the one we created (lease expiry deletes it; etcd#11456 is about believing
 * otherwise) and, in the same revision, finds our predecessor: the contender created just before us.
 */
export function inspectTxn(prefix: string, key: string, createRevision: bigint): ITxnRequest {
  return {
    compare: [createRevisionIs(key, createRevision.toString())],
    success: [
      {
        request_range: {
          ...prefixRange(prefix),
          max_create_revision: (createRevision - 1n).toString(),
          sort_target: SORT_BY_CREATE,
          sort_order: SORT_DESCEND,
          limit: 1,
          keys_only: true,
        },
      },
    ],
    failure: [],
  };
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

/** Deletes our key by revision, never by name alone: a retried release must not delete a newer lock (etcd#22082). */
export function releaseTxn(key: string, createRevision: string): ITxnRequest {
  return {
    compare: [createRevisionIs(key, createRevision)],
    success: [{ request_delete_range: { key: bytes(key) } }],
    // Tells "already gone" (revoke the lease too) from "someone else's key" (touch nothing).
    failure: [{ request_range: { key: bytes(key), keys_only: true } }],
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
