import { LockBackendError } from '../../errors';
import { delay } from '../shared/abort';
import { retryBackoff } from '../shared/backoff';
import type { AcquisitionAbort } from './etcd-acquisition-abort';
import type { WakeReason } from './etcd-deletion-watch';
import type { EtcdLockClient, Inspection } from './etcd-lock-client';
import type { QueueRules, WaitTarget } from './etcd-queue-rules';
import type { EtcdSession } from './etcd-session';

type Wake = WakeReason | 'lease-lost';

/** A queued key: the one whose turn we wait for. */
export interface QueuedKey {
  readonly session: EtcdSession;
  readonly key: string;
  readonly createRevision: bigint;
}

/**
 * A queued contender's wait for its turn: it reads who blocks it, watches that (and nothing else) from the
 * revision after the read, and reads again after every wake-up, re-checking its own key first (etcd#11456).
 * Once queued, a failed read is retried with backoff: a brief outage or leader change should not cost us our
 * place; if etcd keeps failing until the abort, that is a backend error, not a timeout.
 */
export class EtcdTurnWait {
  constructor(
    private readonly etcd: EtcdLockClient,
    private readonly rules: QueueRules,
    private readonly abort: AcquisitionAbort,
    private readonly operation: 'acquire' | 'tryAcquire',
    /** Registers clean-up work (watch cancellations) with the backend, so close() can wait for it. */
    private readonly track: (work: Promise<unknown>) => void,
  ) {}

  /** Resolves true once nobody ahead of us blocks us, false if our key (or its session lease) is gone. */
  async untilFirst(entry: QueuedKey): Promise<boolean> {
    let wake: ((reason: Wake) => void) | undefined;
    const unsubscribe = entry.session.onLost(() => wake?.('lease-lost'));
    try {
      let failedWatches = 0;
      let failedReads = 0;
      // Not a watch from the put's revision at once: by the time it is created, a busy key has moved on, and etcd
      // serves a watch that starts in the past from its catch-up loop, every 100 ms. A read first makes the watch
      // start at the current revision, which etcd serves at once (2 contenders in one process: ~90 ms per handoff).
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
        if (failedWatches > 0) await delay(retryBackoff(failedWatches), this.abort.signal);
        // From the revision after our read, so a deletion between the read and the watch is not missed.
        const reason = await this.sleepUntilWoken(seen.blocker, seen.revision + 1n, (hook) => (wake = hook));
        failedWatches = reason === 'recheck' ? failedWatches + 1 : 0;
      }
    } finally {
      unsubscribe();
    }
  }

  /** Waits before retrying a failed read. An abort now means etcd was failing, so it is a backend error. */
  private async pauseAfterFailure(ms: number, lastError: unknown): Promise<void> {
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
   * session lease being lost). Rejects with the abort's reason.
   */
  private sleepUntilWoken(
    blocker: WaitTarget,
    fromRevision: bigint,
    setWake: (hook: ((reason: Wake) => void) | undefined) => void,
  ): Promise<Wake> {
    const signal = this.abort.signal;
    return new Promise<Wake>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const watch = this.etcd.watchDeletion(blocker, fromRevision);
      let done = false;
      const finish = (settle: () => void) => {
        if (done) return;
        done = true;
        setWake(undefined);
        signal.removeEventListener('abort', onAbort);
        this.track(watch.cancel());
        settle();
      };
      const onAbort = () => finish(() => reject(signal.reason));
      signal.addEventListener('abort', onAbort, { once: true });
      setWake((reason) => finish(() => resolve(reason)));
      void watch.fired.then((reason) => finish(() => resolve(reason)));
    });
  }
}
