import type { AcquireRequest, LockGrant } from '../lock-backend.interface';
import { LockBackendError } from '../../errors';
import { monotonicNow } from '../../utils/clock';
import { AcquisitionAbort, type EtcdOperation } from './etcd-acquisition-abort';
import { contenderValue } from './etcd-key-layout';
import { isLeaseNotFound } from './etcd-lease';
import type { Enqueued, EtcdLockClient } from './etcd-lock-client';
import { EtcdLockState, leaseSecondsFor, validUntil } from './etcd-lock-state';
import type { QueueRules } from './etcd-queue-rules';
import { queueRulesFor } from './etcd-queues';
import type { EtcdSessions, Seat } from './etcd-sessions';
import { EtcdTurnWait } from './etcd-turn-wait';

/** How often join() takes a seat on a fresh session when the lease it joined was gone before our key was put. */
const JOIN_ATTEMPTS = 3;

/** A keepalive sent this recently counts as fresh for a grant that needs one (see handOverFresh). */
const FRESH_KEEPALIVE_MS = 50;

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
}

/**
 * One acquire or tryAcquire: joins the revision-ordered queue under the lock's prefix (Go's
 * concurrency.Mutex), then waits for what blocks it and nothing else (EtcdTurnWait), so a release wakes only
 * those it may let in. Who blocks whom is the queue kind's business (QueueRules): a writer waits for its
 * immediate predecessor, a reader for the nearest earlier writer, a semaphore waiter for enough earlier keys to go.
 *
 * Its key lives on a session lease (EtcdSessions) from the first put, waiting or holding, so an uncontended
 * acquire is one txn and a release one delete. The session keeps the lease alive while we wait (a queued key
 * whose lease expires vanishes). If the key vanished anyway, we join again at the back, on a live session, as
 * long as the caller's signal allows. Failures once queued (a restart, a leader change) are retried with backoff
 * until the signal aborts; failures while joining reject at once, so a wrong address or missing permission shows
 * up immediately.
 */
export class EtcdAcquisition {
  private readonly abort: AcquisitionAbort;
  private readonly rules: QueueRules;
  /** Our seat while it is ours to clean up (not yet handed over as the lock). */
  private entry: QueueEntry | undefined;

  constructor(
    private readonly etcd: EtcdLockClient,
    private readonly sessions: EtcdSessions,
    private readonly request: AcquireRequest,
    private readonly operation: EtcdOperation,
    /** Registers clean-up work with the backend, so close() can wait for it. */
    private readonly track: (work: Promise<unknown>) => void,
    userSignal?: AbortSignal,
    /** The contender key's value, when it is not ours to choose (a leader election's proposal). */
    private readonly value?: string,
  ) {
    this.rules = queueRulesFor(request);
    this.abort = new AcquisitionAbort(etcd.address, operation, userSignal);
  }

  /** The backend is closing: reject with `error` and leave the queue. */
  cancel(error: unknown): void {
    this.abort.cancel(error);
  }

  async acquire(): Promise<LockGrant> {
    try {
      if (this.abort.aborted) throw this.abort.reason;
      for (;;) {
        const entry = await this.join();
        if (entry.holds) return await this.handOverFresh(entry);
        const turn = new EtcdTurnWait(this.etcd, this.rules, this.abort, this.operation, this.track);
        if (await turn.untilFirst(entry)) return await this.handOverFresh(entry);
        // Our key vanished while queued (its lease expired or was revoked). Join again, at the back.
        this.leave();
      }
    } catch (error) {
      this.leave();
      throw error;
    } finally {
      this.abort.detach();
    }
  }

  async tryAcquire(): Promise<LockGrant | null> {
    try {
      const entry = await this.join();
      if (entry.holds ?? (await this.holdsNow(entry))) return await this.handOverFresh(entry);
      // Someone holds or queues ahead of us: delete our key (one write) before we answer.
      this.entry = undefined;
      await this.abort.call(entry.session.deleteAndLeave(entry.key, entry.createRevision.toString()));
      return null;
    } catch (error) {
      this.leave();
      throw error;
    } finally {
      this.abort.detach();
    }
  }

  /**
   * Takes a seat on a session lease and puts our key there; the same txn reads whether we hold at once. If
   * the session's last keepalive is old, one goes out beside the put, so the grant counts from a recent one.
   * If the lease was gone before the put (etcd says "lease not found"), it starts over on a live session.
   */
  private async join(): Promise<Queued> {
    for (let attempt = 1; ; attempt++) {
      const seconds = leaseSecondsFor(this.request.ttl, this.request.lockDelay);
      if (this.abort.aborted) throw this.abort.reason;
      // A session whose lease is known seats us at once; only a new session's grant is a call to wait for.
      const seat =
        this.sessions.seatNow(seconds, this.rules.keyFor) ?? (await this.seatOnNewSession(seconds, this.rules.keyFor));
      const put = this.etcd.enqueue(this.rules, seat.key, this.value ?? contenderValue(this.request), seat.leaseId);
      const entry: QueueEntry = { session: seat.session, leaseId: seat.leaseId, key: seat.key, put };
      this.entry = entry;
      try {
        // Beside the put, not after it: the grant's validity counts from the session's last keepalive.
        const refreshing = seat.session.ensureFresh();
        const queued = await this.abort.call(refreshing ? Promise.all([put, refreshing]).then(([done]) => done) : put);
        entry.createRevision = queued.createRevision;
        return Object.assign(entry, {
          createRevision: queued.createRevision,
          holds: queued.holds,
        });
      } catch (error) {
        const leaseGone = isLeaseNotFound((error as { cause?: unknown })?.cause);
        if (leaseGone) seat.session.end();
        this.leave();
        if (attempt >= JOIN_ATTEMPTS || !leaseGone) throw error;
      }
    }
  }

  /** sessions.join(), given up on at an abort: the seat it still gets is given back. */
  private async seatOnNewSession(seconds: number, keyFor: (leaseId: string) => string): Promise<Seat> {
    const joining = this.sessions.join(seconds, keyFor);
    try {
      return await this.abort.call(joining);
    } catch (error) {
      void joining.then(
        (seat) => seat.session.leave(seat.key),
        () => undefined,
      );
      throw error;
    }
  }

  /** One read: whether nobody ahead of us blocks now (our key still there). */
  private async holdsNow(entry: Queued): Promise<boolean> {
    const seen = await this.abort.call(this.etcd.inspect(this.rules, entry.key, entry.createRevision));
    return seen.present && seen.blocker === undefined;
  }

  /**
   * handOver(), after one more keepalive when the session's last one is so old that the grant would carry less
   * than half its ttl (a slow server: the put and the keepalive sent beside it took long). Such a lock would be
   * due for renewal at once and, at the same latency, lost before the renewal came back.
   */
  private async handOverFresh(entry: Queued): Promise<LockGrant> {
    const left = validUntil(entry.session.aliveSince, this.request.ttl, entry.session.leaseTtlSeconds) - monotonicNow();
    if (left < this.request.ttl / 2 && !entry.session.lost)
      await this.abort.call(entry.session.refresh(FRESH_KEEPALIVE_MS).catch(() => undefined));
    return this.handOver(entry);
  }

  private handOver(entry: Queued): LockGrant {
    // Never grant after the abort, nor on a lease we know is gone; the catch deletes our key.
    if (this.abort.aborted) throw this.abort.reason;
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
   * Leaves the queue: deletes our key in the background once our put settled (by its revision, or by name if
   * the put failed), so a put still in flight cannot land after the delete and stay.
   */
  private leave(): void {
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
