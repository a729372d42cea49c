import type { ITxnRequest, ITxnResponse } from 'etcd3';

/** What a waiter sleeps on until it reads the queue again. */
export type WaitTarget =
  /** The deletion of one key: a writer's predecessor, or the nearest earlier writer of a reader. */
  | { readonly type: 'key'; readonly key: string }
  /**
   * `count` deletions of keys under `prefix` created before `before` (a semaphore waiter: any earlier
   * holder or waiter leaving moves it up, so no single key tells when its turn comes).
   */
  | { readonly type: 'earlier-deletions'; readonly prefix: string; readonly before: bigint; readonly count: number };

/**
 * How one kind of contender (writer, reader, semaphore permit) queues: its key, what it reads when it joins
 * and after every wake-up, and what it then waits for. Every kind keeps the same skeleton (EtcdAcquisition):
 * one key on one lease, ordered by create revision, own key re-checked after every wake-up.
 */
export interface QueueRules {
  /** The range every contender of this lock (or semaphore) lives in. */
  readonly prefix: string;
  /** Our contender key on the lease `leaseId`. */
  readonly keyFor: (leaseId: string) => string;
  /** Puts our key and, in the same revision, reads what blocks it (every other key there is older than ours). */
  enqueueTxn(key: string, token: string, leaseId: string): ITxnRequest;
  /**
   * From the enqueue txn's response: whether we hold at once. Only that: a waiter reads who blocks it anyway
   * before it watches (EtcdAcquisition), so the enqueue txn's reads may be counts, which etcd answers from its
   * index alone (no sort, no key returned): the uncontended acquire pays for nothing it does not use.
   */
  holdsAtOnce(response: ITxnResponse): boolean;
  /** Compares our key's create revision and, in the same revision, reads who is ahead of us. */
  inspectTxn(key: string, createRevision: bigint): ITxnRequest;
  /** From a succeeded inspect txn: what we wait for, or undefined when we hold now. */
  blocker(response: ITxnResponse, key: string, createRevision: bigint): WaitTarget | undefined;
}
