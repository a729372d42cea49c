import type { AcquireRequest, LockGrant } from '../lock-backend.interface';
import { LockBackendError } from '../../errors';
import { delay } from '../shared/abort';
import { retryBackoff } from '../shared/backoff';
import type { WakeReason } from './etcd-deletion-watch';
import { contenderValue } from './etcd-key-layout';
import { isLeaseNotFound } from './etcd-lease';
import { Enqueued, EtcdLockClient, Inspection, toEtcdBackendError } from './etcd-lock-client';
import { EtcdLockState, leaseSecondsFor, validUntil } from './etcd-lock-state';
import type { QueueRules, WaitTarget } from './etcd-queue-rules';
import { queueRulesFor } from './etcd-queues';
import type { EtcdSessions, Seat } from './etcd-sessions';

/** After an abort, how long a call still outstanding may answer before we take etcd for unresponsive. */
const ANSWER_GRACE_MS = 100;

/** How often join() takes a seat on a fresh session when the lease it joined was gone before our key was put. */
const JOIN_ATTEMPTS = 3;

/** Our place in the queue: one key on a session lease. */
interface QueueEntry extends Seat {
  /** The put, awaited by a clean-up even after we stopped waiting for it: a put landing later would stay. */
  put?: Promise<Enqueued>;
  /** Set once the put is known to have happened; until then a clean-up deletes by name. */
  createRevision?: bigint;
}

/** A queue entry whose put succeeded. */
interface Queued extends QueueEntry {
  readonly createRevision: bigint;
  /**
   * Whether we held as soon as our key was put (nobody ahead of us blocked); undefined when the put's
   * answer was lost and a retry found our key already there, so a read must tell.
   */
  readonly holds: boolean | undefined;
  /** What blocked us in the revision of our put, when we did not hold at once. */
  readonly blocker?: WaitTarget;
}

type Wake = WakeReason | 'lease-lost';

/**
 * One acquire or tryAcquire: joins the revision-ordered queue under the lock's prefix (Go's
 * concurrency.Mutex), then waits for what blocks it and nothing else, so a release wakes only those it
 * may let in. Who blocks whom is the queue kind's business (QueueRules): a writer waits for its immediate
 * predecessor, a reader for the nearest earlier writer, a semaphore waiter for enough earlier keys to go.
 *
 * Its key lives on a session lease (EtcdSessions) from the first put, waiting or holding, so an uncontended
 * acquire is one txn and a release one delete. The session keeps the lease alive while we wait (a queued key
 * whose lease expires vanishes), and after every wake-up we re-read our own key before believing we are first
 * (etcd#11456). If the key vanished anyway, we join again at the back, on a live session, as long as the
 * caller's signal allows. Failures once queued (a restart, a leader change) are retried with backoff until the
 * signal aborts; failures while joining reject at once, so a wrong address or missing permission shows up
 * immediately.
 */
export class EtcdAcquisition {
  private readonly controller = new AbortController();
  private readonly rules: QueueRules;
  /** Our seat while it is ours to clean up (not yet handed over as the lock). */
  private entry: QueueEntry | undefined;
  private wake?: (reason: Wake) => void;
  private cancelledWith?: { error: unknown };
  private readonly detachUserSignal: () => void;

  constructor(
    private readonly etcd: EtcdLockClient,
    private readonly sessions: EtcdSessions,
    private readonly request: AcquireRequest,
    private readonly operation: 'acquire' | 'tryAcquire',
    /** Registers clean-up work with the backend, so close() can wait for it. */
    private readonly track: (work: Promise<unknown>) => void,
    userSignal?: AbortSignal,
    /** The contender key's value, when it is not ours to choose (a leader election's proposal). */
    private readonly value?: string,
  ) {
    this.rules = queueRulesFor(request);
    const forward = () => this.controller.abort(userSignal!.reason);
    if (userSignal?.aborted) forward();
    else userSignal?.addEventListener('abort', forward, { once: true });
    this.detachUserSignal = () => userSignal?.removeEventListener('abort', forward);
  }

  private get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The backend is closing: reject with `error` and leave the queue. */
  cancel(error: unknown): void {
    this.cancelledWith ??= { error };
    this.controller.abort(error);
  }

  async acquire(): Promise<LockGrant> {
    try {
      if (this.signal.aborted) throw this.signal.reason;
      for (;;) {
        const entry = await this.join();
        if (entry.holds) return this.handOver(entry);
        if (await this.waitForTurn(entry)) return this.handOver(entry);
        // Our key vanished while queued (its lease expired or was revoked). Join again, at the back.
        this.leave();
      }
    } catch (error) {
      this.leave();
      throw error;
    } finally {
      this.detachUserSignal();
    }
  }

  async tryAcquire(): Promise<LockGrant | null> {
    try {
      const entry = await this.join();
      if (entry.holds ?? (await this.holdsNow(entry))) return this.handOver(entry);
      // Someone holds or queues ahead of us: delete our key (one write) before we answer.
      this.entry = undefined;
      await this.server(entry.session.deleteAndLeave(entry.key, entry.createRevision.toString()));
      return null;
    } catch (error) {
      this.leave();
      throw error;
    } finally {
      this.detachUserSignal();
    }
  }

  /**
   * Takes a seat on a session lease and puts our key there; the same txn reads whether we hold at once. If
   * the session's last keepalive is old, one goes out beside the put, so the grant counts from a recent one.
   * If the lease was gone before the put (etcd says "lease not found"), it starts over on a live session.
   */
  private async join(): Promise<Queued> {
    for (let attempt = 1; ; attempt++) {
      const seat = await this.server(
        this.sessions.join(leaseSecondsFor(this.request.ttl, this.request.lockDelay), (leaseId) =>
          this.rules.keyFor(leaseId),
        ),
      );
      const put = this.etcd.enqueue(this.rules, seat.key, this.value ?? contenderValue(this.request), seat.leaseId);
      const entry: QueueEntry = { ...seat, put };
      this.entry = entry;
      try {
        // Beside the put, not after it: the grant's validity counts from the session's last keepalive.
        const [queued] = await this.server(Promise.all([put, seat.session.ensureFresh()]));
        entry.createRevision = queued.createRevision;
        return Object.assign(entry, {
          createRevision: queued.createRevision,
          holds: queued.holds,
          blocker: queued.blocker,
        });
      } catch (error) {
        const leaseGone = isLeaseNotFound((error as { cause?: unknown })?.cause);
        if (leaseGone) seat.session.end();
        this.leave();
        if (attempt >= JOIN_ATTEMPTS || !leaseGone) throw error;
      }
    }
  }

  /** One read: whether nobody ahead of us blocks now (our key still there). */
  private async holdsNow(entry: Queued): Promise<boolean> {
    const seen = await this.server(this.etcd.inspect(this.rules, entry.key, entry.createRevision));
    return seen.present && seen.blocker === undefined;
  }

  /**
   * Resolves true once nobody ahead of us blocks us, false if our key is gone. Once queued, a failed read is
   * retried with backoff: a brief outage or leader change should not cost us our place.
   */
  private async waitForTurn(entry: Queued): Promise<boolean> {
    const unsubscribe = entry.session.onLost(() => this.wake?.('lease-lost'));
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
          [seen] = await this.server(
            Promise.all([this.etcd.inspect(this.rules, entry.key, entry.createRevision), entry.session.ensureFresh()]),
          );
        } catch (error) {
          if (this.signal.aborted) throw error;
          await this.pauseAfterFailure(retryBackoff(++failedReads), error);
          continue;
        }
        failedReads = 0;
        if (entry.session.lost || !seen.present) return false;
        if (seen.blocker === undefined) return true;
        if (failedWatches > 0) await delay(retryBackoff(failedWatches), this.signal);
        // From the revision after our read, so a deletion between the read and the watch is not missed.
        const reason = await this.sleepUntilWoken(seen.blocker, seen.revision + 1n);
        failedWatches = reason === 'recheck' ? failedWatches + 1 : 0;
      }
    } finally {
      unsubscribe();
    }
  }

  /** Waits before retrying a failed read. An abort now means etcd was failing, so it is a backend error. */
  private async pauseAfterFailure(ms: number, lastError: unknown): Promise<void> {
    try {
      await delay(ms, this.signal);
    } catch {
      throw this.cancelledWith
        ? this.cancelledWith.error
        : new LockBackendError(
            'etcd',
            this.etcd.address,
            this.operation,
            `etcd kept failing while we waited in the queue (last error: ${(lastError as Error)?.message ?? String(lastError)})`,
            { cause: lastError },
          );
    }
  }

  /** Waits for the blocker's deletion(s) (or a reason to re-read). Rejects with the signal's reason. */
  private sleepUntilWoken(blocker: WaitTarget, fromRevision: bigint): Promise<Wake> {
    return new Promise<Wake>((resolve, reject) => {
      if (this.signal.aborted) return reject(this.signal.reason);
      const watch = this.etcd.watchDeletion(blocker, fromRevision);
      let done = false;
      const finish = (settle: () => void) => {
        if (done) return;
        done = true;
        this.wake = undefined;
        this.signal.removeEventListener('abort', onAbort);
        this.track(watch.cancel());
        settle();
      };
      const onAbort = () => finish(() => reject(this.signal.reason));
      this.signal.addEventListener('abort', onAbort, { once: true });
      this.wake = (reason) => finish(() => resolve(reason));
      void watch.fired.then((reason) => finish(() => resolve(reason)));
    });
  }

  private handOver(entry: Queued): LockGrant {
    // Never grant after the abort, nor on a lease we know is gone; the catch deletes our key.
    if (this.signal.aborted) throw this.signal.reason;
    if (entry.session.lost)
      throw new LockBackendError(
        'etcd',
        this.etcd.address,
        this.operation,
        'the session lease expired as the lock was granted',
      );
    // From here the key is the lock's: the core's watchdog renews it through extend(), release() deletes it.
    this.entry = undefined;
    const state: EtcdLockState = {
      keyPath: entry.key,
      createRevision: entry.createRevision.toString(),
      leaseId: entry.leaseId,
      leaseTtlSeconds: entry.session.leaseTtlSeconds,
      requestedTtlSeconds: leaseSecondsFor(this.request.ttl, this.request.lockDelay),
      lockDelay: this.request.lockDelay,
      renewedAt: entry.session.aliveSince,
      renewedFor: this.request.ttl,
    };
    entry.session.holders.add(state);
    return {
      fencingToken: entry.createRevision,
      validUntil: validUntil(entry.session.aliveSince, this.request.ttl, entry.session.leaseTtlSeconds),
      state,
    };
  }

  /**
   * Every server call: errors become LockBackendErrors. An abort while the call is outstanding gives it
   * ANSWER_GRACE_MS to answer: if it does, the wait simply ended (the signal's reason); if not, etcd is not
   * answering (etcd3 keeps retrying against a dead server), and that is a LockBackendError, not a timeout.
   */
  private server<T>(work: Promise<T>): Promise<T> {
    const mapped = work.catch((error: unknown) => {
      throw toEtcdBackendError(this.etcd.address, this.operation, error);
    });
    return new Promise<T>((resolve, reject) => {
      let grace: NodeJS.Timeout | undefined;
      const onAbort = () => {
        if (this.cancelledWith) return reject(this.cancelledWith.error);
        grace = setTimeout(
          () =>
            reject(
              new LockBackendError(
                'etcd',
                this.etcd.address,
                this.operation,
                'the wait ended while a request to etcd was still outstanding',
                {
                  cause: this.signal.reason,
                },
              ),
            ),
          ANSWER_GRACE_MS,
        );
      };
      const settle = () => {
        clearTimeout(grace);
        this.signal.removeEventListener('abort', onAbort);
      };
      if (this.signal.aborted) onAbort();
      else this.signal.addEventListener('abort', onAbort, { once: true });
      mapped.then(
        (value) => {
          settle();
          if (this.signal.aborted) reject(this.cancelledWith ? this.cancelledWith.error : this.signal.reason);
          else resolve(value);
        },
        (error: unknown) => {
          settle();
          reject(error);
        },
      );
    });
  }

  /**
   * Leaves the queue: deletes our key in the background once our put settled (by its revision, or by name if
   * the put failed), so a put still in flight cannot land after the delete and stay.
   */
  private leave(): void {
    this.wake = undefined;
    const entry = this.entry;
    this.entry = undefined;
    if (!entry) return;
    const put = entry.put ?? Promise.resolve(undefined);
    this.track(
      put
        .then(
          (queued) => queued?.createRevision ?? entry.createRevision,
          () => entry.createRevision,
        )
        .then((revision) => entry.session.deleteAndLeave(entry.key, revision?.toString())),
    );
  }
}
