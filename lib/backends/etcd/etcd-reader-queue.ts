import { lockPrefix, prefixRangeEnd, READER_MARK, readerKey } from './etcd-key-layout';
import type { QueueRules } from './etcd-queue-rules';
import { bytes, countRange, enqueueTxn, inspectTxn, KeyRange, lastCreatedBefore, rangeCount } from './etcd-requests';
import { nearestKey } from './etcd-writer-queue';

/**
 * Read locks (the seeds' `R` nodes): a reader queues in the lock's own range as `<prefix>r-<lease hex>`
 * and waits only for the nearest WRITER created before it; earlier readers do not block it. A writer that
 * queued while readers held is such a writer for every reader that comes after it, so a stream of new
 * readers cannot starve it. When that writer goes, the reader reads again: an even earlier writer may
 * still be there (the one it went was a waiter that gave up), and then it waits for that one.
 *
 * Writers are every key outside the readers' sub-range `r-`..`r.`: two ranges, read in one txn.
 */
export function readerQueue(namespace: string, key: string): QueueRules {
  const prefix = lockPrefix(namespace, key);
  const writers = writerRanges(prefix);
  const countWriters = writers.map(countRange);
  return {
    prefix,
    keyFor: (leaseId) => readerKey(prefix, leaseId),
    // Every key there at our put was created before us: we hold at once if none of them is a writer.
    enqueueTxn: (own, token, leaseId) => enqueueTxn(own, token, leaseId, countWriters),
    holdsAtOnce: (response) => writers.every((_, index) => rangeCount(response, index + 1) === 0),
    inspectTxn: (own, createRevision) =>
      inspectTxn(
        own,
        createRevision,
        writers.map((range) => lastCreatedBefore(range, createRevision)),
      ),
    blocker: (response, own) => nearestKey(response, own),
  };
}

/** The lock's range minus the readers' sub-range: `[prefix, prefix r-)` and `[prefix r., end of prefix)`. */
function writerRanges(prefix: string): KeyRange[] {
  const readersStart = bytes(prefix + READER_MARK);
  const readersEnd = prefixRangeEnd(readersStart);
  return [
    { key: bytes(prefix), range_end: readersStart },
    { key: readersEnd, range_end: prefixRangeEnd(bytes(prefix)) },
  ];
}
