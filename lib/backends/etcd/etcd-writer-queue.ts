import type { ITxnResponse } from 'etcd3';
import { contenderKey, lockPrefix } from './etcd-key-layout';
import type { QueueRules, WaitTarget } from './etcd-queue-rules';
import { countRange, enqueueTxn, inspectTxn, lastCreatedBefore, prefixRange, rangeCount } from './etcd-requests';

/**
 * Exclusive and write locks, exactly Go's concurrency.Mutex: the key is `<prefix><lease hex>`, the lowest
 * create revision in the whole range holds, and a waiter watches its immediate predecessor, whatever kind
 * that is (a reader too): a writer waits for everyone who came before it.
 */
export function writerQueue(namespace: string, key: string): QueueRules {
  const prefix = lockPrefix(namespace, key);
  const everyone = prefixRange(prefix);
  const countEveryone = [countRange(everyone)];
  return {
    prefix,
    keyFor: (leaseId) => contenderKey(prefix, leaseId),
    // Ours is the newest key: we hold if it is alone (the count includes it).
    enqueueTxn: (own, token, leaseId) => enqueueTxn(own, token, leaseId, countEveryone),
    holdsAtOnce: (response) => rangeCount(response, 1) === 1,
    inspectTxn: (own, createRevision) => inspectTxn(own, createRevision, [lastCreatedBefore(everyone, createRevision)]),
    blocker: (response, own) => nearestKey(response, own),
  };
}

/** The key created last among a txn's ranges, other than our own, or undefined if there is none. */
export function nearestKey(response: ITxnResponse, own: string): WaitTarget | undefined {
  let nearest: { key: string; revision: bigint } | undefined;
  for (const op of response.responses) {
    // Every key each range returned (the inspect txn reads only keys created before ours).
    for (const kv of op.response_range?.kvs ?? []) {
      const key = kv.key.toString('utf8');
      // max_create_revision = 0 would mean "no bound"; never mistake our own key for someone ahead of us.
      if (key === own) continue;
      const revision = BigInt(kv.create_revision);
      if (!nearest || revision > nearest.revision) nearest = { key, revision };
    }
  }
  return nearest && { type: 'key', key: nearest.key };
}
