import type { Etcd3, IKeyValue, IWatchResponse, Watcher } from 'etcd3';

/**
 * Why a waiter woke up. Either way it re-reads before believing anything:
 *  - 'deleted': the predecessor's key was deleted (released, revoked, expired, or it left the queue);
 *  - 'recheck': the watch can no longer promise to report the deletion (the server cancelled it, e.g. its
 *    start revision was compacted, or the stream dropped and etcd3 would resume it from a revision it
 *    guessed), so the waiter reads again and watches from the revision of that read.
 */
export type WakeReason = 'deleted' | 'recheck';

export interface DeletionWatch {
  readonly fired: Promise<WakeReason>;
  /**
   * The revision the server had when it created the watch: the watch reports every change after it. Pending
   * until then; never settles if the watch is never created (then `fired` says 'recheck').
   */
  readonly createdAt: Promise<bigint>;
  /** Detaches the watcher from etcd3's shared watch stream. Safe to call more than once. */
  cancel(): Promise<void>;
}

/*
 * Watches start at the server's current revision, never at an earlier one: etcd serves a watch that starts in
 * the past from a catch-up loop that runs every 100 ms, so on a busy server (any write anywhere in between) a
 * watch from the revision after the waiter's read stalled its handoff for up to 100 ms. Whoever watches
 * compares `createdAt` with its read instead, and reads again if the server moved on in between (EtcdTurnWait).
 */

/**
 * Watches one key for deletion. All watchers share the client's single watch stream (etcd3's WatchManager
 * multiplexes them), so a thousand waiters cost one stream, not a thousand.
 */
export function watchDeletion(client: Etcd3, key: string): DeletionWatch {
  // watcher() rather than create(): listeners are attached before the first event can arrive.
  const watcher = client.watch().key(key).only('delete').watcher();
  return followWatcher(watcher, (fire) => watcher.on('delete', () => fire('deleted')));
}

/**
 * Watches a range and fires once `count` keys created before revision `before` were deleted. Each delete
 * event carries the deleted key's previous version, and with it its create revision; later keys (newer
 * waiters) leaving do not count. If the server no longer has that previous version (compacted), the event is
 * taken as a reason to read again, which is always safe.
 */
export function watchEarlierDeletions(client: Etcd3, prefix: string, before: bigint, count: number): DeletionWatch {
  const watcher = client.watch().prefix(prefix).only('delete').withPreviousKV().watcher();
  let remaining = count;
  return followWatcher(watcher, (fire) =>
    watcher.on('delete', (_kv: IKeyValue, previous?: IKeyValue) => {
      if (!previous?.create_revision) return fire('deleted');
      if (BigInt(previous.create_revision) < before && --remaining <= 0) fire('deleted');
    }),
  );
}

/** Turns a watcher's life cycle into a DeletionWatch; `listen` attaches the deletion listener. */
function followWatcher(watcher: Watcher, listen: (fire: (reason: WakeReason) => void) => void): DeletionWatch {
  let attached = true;
  let cancelled: Promise<void> | undefined;
  let fire!: (reason: WakeReason) => void;
  const fired = new Promise<WakeReason>((resolve) => (fire = resolve));
  let created!: (revision: bigint) => void;
  const createdAt = new Promise<bigint>((resolve) => (created = resolve));

  listen((reason) => fire(reason));
  // The first create response only: etcd3 re-creates a watcher after a dropped stream, and says so first
  // ('disconnected', below), which makes the waiter read again anyway.
  watcher.once('connected', (response: IWatchResponse) => created(BigInt(response.header.revision)));
  // The server cancelled the watcher and etcd3 already dropped it: cancelling again would wait forever.
  watcher.on('error', () => {
    attached = false;
    fire('recheck');
  });
  watcher.on('end', () => (attached = false));
  watcher.on('disconnected', () => fire('recheck'));

  return {
    fired,
    createdAt,
    cancel() {
      if (!cancelled) {
        cancelled = attached ? watcher.cancel().catch(() => undefined) : Promise.resolve();
        attached = false;
      }
      return cancelled;
    },
  };
}
