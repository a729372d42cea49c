import { LockBackendError } from '../../errors';
import { delay } from '../../utils/abort';
import { retryBackoff } from '../../utils/backoff';
import type { AcquisitionAbort, EtcdOperation } from './etcd-acquisition-abort';
import type { DeletionWatch, WakeReason } from './etcd-deletion-watch';
import type { EtcdLockClient, Inspection } from './etcd-lock-client';
import type { QueueRules, WaitTarget } from './etcd-queue-rules';
import type { EtcdSession } from './etcd-session';
import { isClientClosedError } from './etcd-fault-handling';

/** 'behind': the watch was created after the server moved past our read, so the read must be repeated. */
type Wake = WakeReason | 'lease-lost' | 'behind';

/** A queued key: the one whose turn we wait for. */
export interface QueuedKey {
  readonly session: EtcdSession;
  readonly key: string;
  readonly createRevision: bigint;
}

/** A watch on what blocks us, kept across reads while it still covers everything after the latest one. */
interface Watching {
  readonly target: WaitTarget;
  readonly watch: DeletionWatch;
  /** The watch's creation revision, once the server answered. */
  createdAt?: bigint;
}

/**
 * A queued contender's wait for its turn: it reads who blocks it, watches that (and nothing else), and reads
 * again after every wake-up, re-checking its own key first (etcd#11456). The watch starts at the server's
 * current revision, so etcd serves it at once; if the server had moved past our read by then, a change in
 * between could be missed, so we read once more and keep the watch, which covers everything after that read.
 * Once queued, a failed read is retried with backoff: a brief outage or leader change should not cost us our
 * place; if etcd keeps failing until the abort, that is a backend error, not a timeout.
 */
export class EtcdTurnWait {
  constructor(
    private readonly etcd: EtcdLockClient,
    private readonly rules: QueueRules,
    private readonly abort: AcquisitionAbort,
    private readonly operation: EtcdOperation,
    /** Registers clean-up work (watch cancellations) with the backend, so close() can wait for it. */
    private readonly track: (work: Promise<unknown>) => void,
  ) {}

  /** Resolves true once nobody ahead of us blocks us, false if our key (or its session lease) is gone. */
  async untilFirst(entry: QueuedKey): Promise<boolean> {
    let wake: ((reason: Wake) => void) | undefined;
    const unsubscribe = entry.session.onLost(() => wake?.('lease-lost'));
    let watching: Watching | undefined;
    const stopWatching = () => {
      if (watching) this.track(watching.watch.cancel());
      watching = undefined;
    };
    try {
      let failedWatches = 0;
      let failedReads = 0;
      for (;;) {
        let seen: Inspection;
        try {
          // Keep the session fresh, so a grant right after this read counts from a recent keepalive.
          [seen] = await this.abort.call(
            Promise.all([this.etcd.inspect(this.rules, entry.key, entry.createRevision), entry.session.ensureFresh()]),
          );
        } catch (error) {
          if (this.abort.aborted) throw error;
          await this.pauseAfterFailure(retryBackoff(++failedReads), error);
          continue;
        }
        failedReads = 0;
        if (entry.session.lost || !seen.present) return false;
        if (seen.blocker === undefined) return true;
        // A watch created at or before this read's revision, on the same target, misses nothing after it.
        const kept =
          watching?.createdAt !== undefined &&
          watching.createdAt <= seen.revision &&
          sameTarget(watching.target, seen.blocker);
        if (!kept || !watching) {
          stopWatching();
          if (failedWatches > 0) await delay(retryBackoff(failedWatches), this.abort.signal);
          watching = { target: seen.blocker, watch: this.etcd.watchDeletion(seen.blocker) };
        }
        const reason = await this.sleepUntilWoken(watching, seen.revision, (hook) => (wake = hook));
        if (reason === 'behind') continue;
        stopWatching();
        failedWatches = reason === 'recheck' ? failedWatches + 1 : 0;
      }
    } finally {
      unsubscribe();
      stopWatching();
    }
  }

  /** Waits before retrying a failed read. An abort now means etcd was failing, so it is a backend error. */
  private async pauseAfterFailure(ms: number, lastError: unknown): Promise<void> {
    // etcd3 refuses every call of a closed client: no retry can succeed, so fail now, not when the wait ends.
    if (isClientClosedError(lastError)) {
      throw new LockBackendError(
        'etcd',
        this.etcd.address,
        this.operation,
        'the etcd client passed to the backend was closed while this call waited in the queue',
        { cause: lastError },
      );
    }
    try {
      await delay(ms, this.abort.signal);
    } catch {
      throw this.abort.cancelled
        ? this.abort.cancelled.error
        : new LockBackendError(
            'etcd',
            this.etcd.address,
            this.operation,
            `etcd kept failing while we waited in the queue (last error: ${(lastError as Error)?.message ?? String(lastError)})`,
            { cause: lastError },
          );
    }
  }

  /**
   * Waits for the blocker's deletion(s), or another reason to re-read (given to `setWake`'s hook, such as the
   * session lease being lost), or 'behind' once the watch turns out to start after `readRevision`. Rejects
   * with the abort's reason. Leaves the watch to the caller.
   */
  private sleepUntilWoken(
    watching: Watching,
    readRevision: bigint,
    setWake: (hook: ((reason: Wake) => void) | undefined) => void,
  ): Promise<Wake> {
    const signal = this.abort.signal;
    return new Promise<Wake>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      let done = false;
      const finish = (settle: () => void) => {
        if (done) return;
        done = true;
        setWake(undefined);
        signal.removeEventListener('abort', onAbort);
        settle();
      };
      const onAbort = () => finish(() => reject(signal.reason));
      signal.addEventListener('abort', onAbort, { once: true });
      setWake((reason) => finish(() => resolve(reason)));
      void watching.watch.fired.then((reason) => finish(() => resolve(reason)));
      if (watching.createdAt === undefined)
        void watching.watch.createdAt.then((revision) => {
          watching.createdAt = revision;
          if (revision > readRevision) finish(() => resolve('behind'));
        });
    });
  }
}

function sameTarget(a: WaitTarget, b: WaitTarget): boolean {
  if (a.type === 'key') return b.type === 'key' && a.key === b.key;
  return b.type === 'earlier-deletions' && a.prefix === b.prefix && a.before === b.before && a.count === b.count;
}
