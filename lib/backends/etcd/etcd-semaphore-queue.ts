import { contenderKey, semaphorePrefix } from './etcd-key-layout';
import type { QueueRules, WaitTarget } from './etcd-queue-rules';
import { countRange, enqueueTxn, inspectTxn, prefixRange, rangeCount } from './etcd-requests';

/**
 * Counting semaphores: each holder or waiter is `<ns>/%semaphore/<enc(key)>/<lease hex>` on its own lease,
 * apart from the lock of the same name. The first `permits` keys by create revision hold; a crashed
 * holder's key goes with its lease, after its ttl.
 *
 * Waiting: watching one key is not enough here. A waiter with k earlier keys holds once k < permits, and ANY
 * earlier key leaving moves it up: holders release in any order, so no single key's deletion marks its turn.
 * So it watches deletions over the semaphore's range (with the deleted key's previous create revision),
 * counts those of keys created before its own, and reads again only after k - permits + 1 of them. Every
 * waiter sees each deletion on the client's one watch stream, but only the waiter(s) that may now hold send
 * a request: the herd is one event per waiter, not one read per waiter.
 */
export function semaphoreQueue(namespace: string, key: string, permits: number): QueueRules {
  const prefix = semaphorePrefix(namespace, key);
  const everyone = prefixRange(prefix);
  const countEveryone = [countRange(everyone)];
  return {
    prefix,
    keyFor: (leaseId) => contenderKey(prefix, leaseId),
    // All keys there at our put are earlier ones; the count includes ours.
    enqueueTxn: (own, token, leaseId) => enqueueTxn(own, token, leaseId, countEveryone),
    holdsAtOnce: (response) => rangeCount(response, 1) - 1 < permits,
    // Not count_only: the server counts a range before it applies max_create_revision, so the keys are needed.
    inspectTxn: (own, createRevision) =>
      inspectTxn(own, createRevision, [
        { request_range: { ...everyone, max_create_revision: (createRevision - 1n).toString(), keys_only: true } },
      ]),
    blocker: (response, own, createRevision) => {
      const earlier = (response.responses[0]?.response_range?.kvs ?? []).filter(
        (kv) => kv.key.toString('utf8') !== own,
      ).length;
      return earlierBlocker(prefix, createRevision, earlier, permits);
    },
  };
}

/** With `earlier` keys before ours, we hold while fewer than `permits`; else we wait for enough of them to go. */
function earlierBlocker(prefix: string, before: bigint, earlier: number, permits: number): WaitTarget | undefined {
  if (earlier < permits) return undefined;
  return { type: 'earlier-deletions', prefix, before, count: earlier - permits + 1 };
}
