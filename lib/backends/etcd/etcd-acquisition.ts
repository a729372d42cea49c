import type { AcquireRequest, LockGrant } from '../lock-backend.interface';
import { LockBackendError } from '../../errors';
import { monotonicNow } from '../../utils/clock';
import { delay, raceAbort } from '../shared/abort';
import type { WakeReason } from './etcd-deletion-watch';
import { contenderValue } from './etcd-key-layout';
import { GrantedLease, isLeaseNotFound } from './etcd-lease';
import { EtcdLockClient, Inspection, toEtcdBackendError } from './etcd-lock-client';
import { EtcdLockState, leaseSecondsFor, validUntil } from './etcd-lock-state';
import { QueueRules, queueRulesFor, WaitTarget } from './etcd-queue-rules';

/** Deadline for the clean-up calls we make on our own (revoking a waiter's lease), so none lingers. */
export const CLEANUP_DEADLINE_MS = 5_000;
/** Upper bound of the pause before a retry, when reads or watches keep failing, so nothing spins. */
const MAX_BACKOFF_MS = 1_000;

function backoff(failures: number): number {
  return Math.min(MAX_BACKOFF_MS, 50 * 2 ** failures);
}

/** How often join() takes a fresh lease when the one it just granted was gone before our key was put. */
const JOIN_ATTEMPTS = 3;

/** A lease we granted and keep alive while we wait. */
interface WaitingLease {
  readonly lease: Promise<GrantedLease>;
  readonly leaseId: string;
  readonly leaseTtlSeconds: number;
  /** Monotonic time just before the last grant/keepalive of this lease that succeeded. */
  aliveSince: number;
}

/** Our place in the queue: one key on one lease. */
interface QueueEntry extends WaitingLease {
  readonly key: string;
  readonly createRevision: bigint;
  /**
   * Whether we held as soon as our key was put (nobody ahead of us blocked); undefined when the put's
   * answer was lost and a retry found our key already there, so a read must tell.
   */
  readonly holds: boolean | undefined;
}

type Wake = WakeReason | 'lease-lost';

/**
 * One acquire or tryAcquire: joins the revision-ordered queue under the lock's prefix (Go's
 * concurrency.Mutex), then waits for what blocks it and nothing else, so a release wakes only those it
 * may let in. Who blocks whom is the queue kind's business (QueueRules): a writer waits for its immediate
 * predecessor, a reader for the nearest earlier writer, a semaphore waiter for enough earlier keys to go.
 *
 * While queued it keeps its own lease alive (a queued key whose lease expires vanishes), and after every
 * wake-up it re-reads its own key before believing it is first (etcd#11456). If its key vanished anyway,
 * it joins again at the back with a fresh lease, as long as the caller's signal allows. Failures once
 * queued (a restart, a leader change) are retried with backoff until the signal aborts; failures while
 * joining reject at once, so a wrong address or missing permission shows up immediately.
 */
export class EtcdAcquisition {
  private readonly controller = new AbortController();
  private readonly rules: QueueRules;
  /** Leases this attempt granted and still has to revoke unless it hands one over as the lock. */
  private readonly leases = new Set<Promise<GrantedLease>>();
  private keepaliveTimer?: NodeJS.Timeout;
  private wake?: (reason: Wake) => void;
  private cancelledWith?: { error: unknown };
  private readonly detachUserSignal: () => void;

  constructor(
    private readonly etcd: EtcdLockClient,
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
        // Our key vanished while queued (lease expired or revoked). Join again, at the back, with a new lease.
        this.stopKeepalive();
        this.revokeLater(entry.lease);
      }
    } catch (error) {
      this.abandon();
      throw error;
    } finally {
      this.detachUserSignal();
    }
  }

  async tryAcquire(): Promise<LockGrant | null> {
    try {
      const entry = await this.join();
      if (entry.holds ?? (await this.holdsNow(entry))) return this.handOver(entry);
      this.stopKeepalive();
      // Someone holds or queues ahead of us. Revoking the lease deletes our key with it, in one request.
      await this.server(this.etcd.revoke(entry.leaseId));
      this.leases.delete(entry.lease);
      return null;
    } catch (error) {
      this.abandon();
      throw error;
    } finally {
      this.detachUserSignal();
    }
  }

  /**
   * Grants a lease and puts our key on it; the same txn reads whether we hold at once. The lease is kept
   * alive from the grant on: during a leader election one request can hang for etcd's request timeout
   * (5 s + 2 election timeouts), longer than a short lease lives. If the lease still expired before the
   * put (etcd says "lease not found"), it starts over with a fresh one.
   */
  private async join(): Promise<QueueEntry> {
    for (let attempt = 1; ; attempt++) {
      const startedAt = monotonicNow();
      const lease = this.etcd.grant(leaseSecondsFor(this.request.ttl));
      this.leases.add(lease);
      lease.catch(() => this.leases.delete(lease));
      const granted = await this.server(lease);
      const waiting: WaitingLease = { lease, leaseId: granted.id, leaseTtlSeconds: granted.ttlSeconds, aliveSince: startedAt };
      this.startKeepalive(waiting);
      const key = this.rules.keyFor(granted.id);
      try {
        const queued = await this.server(this.etcd.enqueue(this.rules, key, this.value ?? contenderValue(this.request), granted.id));
        return Object.assign(waiting, { key, createRevision: queued.createRevision, holds: queued.holds });
      } catch (error) {
        this.stopKeepalive();
        this.revokeLater(lease);
        if (attempt >= JOIN_ATTEMPTS || !isLeaseNotFound((error as { cause?: unknown })?.cause)) throw error;
      }
    }
  }

  /** One read: whether nobody ahead of us blocks now (our key still there). */
  private async holdsNow(entry: QueueEntry): Promise<boolean> {
    const seen = await this.server(this.etcd.inspect(this.rules, entry.key, entry.createRevision));
    return seen.present && seen.blocker === undefined;
  }

  /**
   * Resolves true once nobody ahead of us blocks us, false if our key is gone. Once queued, a failed read is
   * retried with backoff: a brief outage or leader change should not cost us our place.
   */
  private async waitForTurn(entry: QueueEntry): Promise<boolean> {
    let failedWatches = 0;
    let failedReads = 0;
    for (;;) {
      // Renew and re-read together: the lease is alive from `startedAt` on, and the key was still ours.
      const startedAt = monotonicNow();
      let leaseTtl: number;
      let seen: Inspection;
      try {
        [leaseTtl, seen] = await this.server(
          Promise.all([
            this.etcd.keepAlive(entry.leaseId, entry.leaseTtlSeconds * 1000),
            this.etcd.inspect(this.rules, entry.key, entry.createRevision),
          ]),
        );
      } catch (error) {
        if (this.signal.aborted) throw error;
        await this.pauseAfterFailure(backoff(++failedReads), error);
        continue;
      }
      failedReads = 0;
      if (leaseTtl <= 0 || !seen.present) return false;
      entry.aliveSince = Math.max(entry.aliveSince, startedAt);
      if (seen.blocker === undefined) return true;
      if (failedWatches > 0) await delay(backoff(failedWatches), this.signal);
      // From the revision after our read, so a deletion between the read and the watch is not missed.
      const reason = await this.sleepUntilWoken(seen.blocker, seen.revision + 1n);
      failedWatches = reason === 'recheck' ? failedWatches + 1 : 0;
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

  /** Keeps a waiting lease alive at a third of its TTL, like etcd's own clients. The timer is unref'd. */
  private startKeepalive(entry: WaitingLease): void {
    let inFlight = false;
    const tick = async () => {
      if (inFlight) return;
      inFlight = true;
      const startedAt = monotonicNow();
      try {
        const leaseTtl = await this.etcd.keepAlive(entry.leaseId, entry.leaseTtlSeconds * 1000);
        if (leaseTtl > 0) entry.aliveSince = Math.max(entry.aliveSince, startedAt);
        else this.wake?.('lease-lost');
      } catch {
        // Transient: the next tick retries, and every wake-up re-reads the key before trusting anything.
      } finally {
        inFlight = false;
      }
    };
    this.keepaliveTimer = setInterval(() => this.track(tick()), Math.max(100, (entry.leaseTtlSeconds * 1000) / 3));
    this.keepaliveTimer.unref();
  }

  private stopKeepalive(): void {
    clearInterval(this.keepaliveTimer);
    this.keepaliveTimer = undefined;
  }

  private handOver(entry: QueueEntry): LockGrant {
    this.stopKeepalive();
    // Never grant after the abort; the catch revokes the lease.
    if (this.signal.aborted) throw this.signal.reason;
    // From here the lease is the lock's: the core's watchdog keeps it alive through extend().
    this.leases.delete(entry.lease);
    const seconds = leaseSecondsFor(this.request.ttl);
    const state: EtcdLockState = {
      keyPath: entry.key,
      createRevision: entry.createRevision.toString(),
      leaseId: entry.leaseId,
      leaseTtlSeconds: entry.leaseTtlSeconds,
      requestedTtlSeconds: seconds,
    };
    return {
      fencingToken: entry.createRevision,
      validUntil: validUntil(entry.aliveSince, this.request.ttl, entry.leaseTtlSeconds),
      state,
    };
  }

  /**
   * Every server call: errors become LockBackendErrors, and an abort while the call is outstanding rejects
   * at once (etcd3 keeps retrying against a dead server) with a LockBackendError, not the wait's reason.
   */
  private server<T>(work: Promise<T>): Promise<T> {
    const mapped = work.catch((error: unknown) => {
      throw toEtcdBackendError(this.etcd.address, this.operation, error);
    });
    return raceAbort(mapped, this.signal, () =>
      this.cancelledWith
        ? this.cancelledWith.error
        : new LockBackendError(
            'etcd',
            this.etcd.address,
            this.operation,
            'the wait ended while a request to etcd was still outstanding',
            { cause: this.signal.reason },
          ),
    );
  }

  /** Leaves the queue: stops the keepalive and revokes every lease this attempt still holds. */
  private abandon(): void {
    this.stopKeepalive();
    this.wake = undefined;
    for (const lease of [...this.leases]) this.revokeLater(lease);
  }

  /** Revokes in the background (deleting the key on it) once the grant, possibly still in flight, lands. */
  private revokeLater(lease: Promise<GrantedLease>): void {
    this.leases.delete(lease);
    this.track(
      lease
        .then((granted) => this.etcd.revoke(granted.id, { deadline: Date.now() + CLEANUP_DEADLINE_MS }))
        .catch(() => undefined),
    );
  }
}
