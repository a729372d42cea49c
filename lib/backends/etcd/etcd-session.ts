import { monotonicNow } from '../../utils/clock';
import { withDeadline } from '../../utils/deadline';
import type { GrantedLease } from './etcd-lease';
import type { EtcdLockClient } from './etcd-lock-client';
import type { EtcdLockState } from './etcd-lock-state';

/**
 * How long we wait for a clean-up call we make on our own (a revoke, a delete). Bounded here, not with a gRPC
 * deadline: etcd3 counts a deadline that passes as a failed host, and after three in a row (three releases
 * during a stall of the server) its circuit breaker refuses every call, acquires and renewals too, for 5 s
 * after etcd is back. The call itself goes on until etcd answers it.
 */
export const CLEANUP_DEADLINE_MS = 5_000;

function deleteTimedOut(): Error {
  return new Error(`etcd did not answer the delete within ${CLEANUP_DEADLINE_MS} ms; it is retried until etcd does`);
}

/** What a session needs from the pool that owns it. */
export interface SessionOwner {
  readonly etcd: EtcdLockClient;
  /** Registers clean-up work, so close() can wait for it. */
  background(work: Promise<unknown>): void;
  /** The session's lease is gone or revoked: forget it, so later contenders get a new one. */
  ended(session: EtcdSession): void;
}

/**
 * One lease shared by contenders of one ttl, as Go's `concurrency.Session` shares its lease among its mutexes.
 * Every contender key on it (held or queued) is `<prefix><lease hex>`, so a lease carries at most one key per
 * lock name: `names` reserves them. The session keeps its lease alive itself, at a third of its TTL, while any
 * name is reserved, whatever the acquisitions and the watchdog are doing: a keepalive is one request on a
 * stream of its own and never queues behind acquires. The watchdog's renewals count as keepalives too
 * (renewed()), so a busy session sends no more than one keepalive per period.
 *
 * A held lock whose holder stopped renewing (lost: validity passed, or maxHold reached) must not keep its key
 * alive through the others: each tick deletes the keys of holders not renewed within their ttl (+ lock-delay). An idle
 * session (no name reserved for a whole period) revokes its lease, so nothing outlives ttl + a period.
 */
export class EtcdSession {
  readonly lease: Promise<GrantedLease>;
  leaseId: string | undefined;
  leaseTtlSeconds: number;
  /** Monotonic ms just before the last grant or keepalive of this lease that succeeded. */
  aliveSince = -Infinity;
  /** Contender keys on this lease that are in use: held, queued, or still being cleaned up. */
  readonly names = new Set<string>();
  /** Held locks on this lease (a subset of `names`). */
  readonly holders = new Set<EtcdLockState>();
  /** The lease is gone (expired, revoked, or retired by us): its keys are gone with it. */
  lost = false;
  /** No new contender may join (a key moved off it keeps its old name); it retires once empty. */
  closedForJoins = false;
  private readonly lossListeners = new Set<() => void>();
  /** Keys whose delete failed (name -> create revision), retried each tick: their names stay reserved. */
  private readonly undeleted = new Map<string, string | undefined>();
  private refreshing: Promise<number> | undefined;
  /** Monotonic ms when `refreshing` was sent. */
  private refreshingSince = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  private idleSince: number | undefined;

  constructor(
    private readonly owner: SessionOwner,
    readonly ttlSeconds: number,
  ) {
    this.leaseTtlSeconds = ttlSeconds;
    const startedAt = monotonicNow();
    this.lease = owner.etcd.grant(ttlSeconds).then(
      (lease) => {
        this.leaseId = lease.id;
        this.leaseTtlSeconds = lease.ttlSeconds;
        this.aliveSince = startedAt;
        if (!this.lost) this.arm(this.periodMs);
        return lease;
      },
      (error: unknown) => {
        this.end();
        throw error;
      },
    );
    this.lease.catch(() => undefined);
  }

  /** A third of the lease's TTL, as etcd's own clients keep leases alive. */
  get periodMs(): number {
    return Math.max(100, (this.leaseTtlSeconds * 1000) / 3);
  }

  /**
   * One keepalive, shared with one already in flight if that was sent within `maxAgeMs`. Resolves the lease's
   * TTL, <= 0 once it is gone. A grant counts its validity from the keepalive's sending, so on a slow server
   * sharing one sent long ago would hand out a lock with little validity left: then another goes out beside it.
   */
  refresh(maxAgeMs = Infinity): Promise<number> {
    if (this.refreshing && monotonicNow() - this.refreshingSince <= maxAgeMs) return this.refreshing;
    this.refreshingSince = monotonicNow();
    const refreshing: Promise<number> = this.keepAlive().finally(() => {
      if (this.refreshing === refreshing) this.refreshing = undefined;
    });
    this.refreshing = refreshing;
    return refreshing;
  }

  /**
   * A keepalive if the last one is older than half a period (the timer runs late on a busy event loop), so a
   * grant that follows counts its validity from a recent one. Undefined when the session is fresh (nothing to
   * wait for); never rejects (a failed keepalive leaves the validity where it was, which is always safe).
   */
  ensureFresh(): Promise<unknown> | undefined {
    if (monotonicNow() - this.aliveSince <= this.periodMs / 2) return undefined;
    return this.refresh(this.periodMs / 2).catch(() => undefined);
  }

  /** A keepalive sent by someone else (the watchdog's batch) answered: `ttl` <= 0 means the lease is gone. */
  renewed(startedAt: number, ttl: number): void {
    if (ttl <= 0) return this.end();
    this.aliveSince = Math.max(this.aliveSince, startedAt);
    this.leaseTtlSeconds = ttl;
    // Every keepalive keeps the others' keys alive too: this is where a holder that stopped renewing is dropped.
    this.dropUnrenewedHolders();
    if (!this.lost) this.arm(this.aliveSince + this.periodMs - monotonicNow());
  }

  /** Calls `listener` once if the lease is lost; returns the unsubscribe. */
  onLost(listener: () => void): () => void {
    if (this.lost) {
      listener();
      return () => undefined;
    }
    this.lossListeners.add(listener);
    return () => this.lossListeners.delete(listener);
  }

  /** A contender key on this lease is no longer used (deleted, or gone with the lease). */
  leave(name: string): void {
    this.names.delete(name);
    if (this.names.size === 0) this.idleSince = monotonicNow();
    if (this.names.size === 0 && this.closedForJoins) void this.retire(); // never rejects; owner.background tracks it
  }

  /** The lease is gone: every key on it went with it. Waiters wake; holders learn it at their next renewal. */
  end(): void {
    if (this.lost) return;
    this.lost = true;
    this.disarm();
    this.owner.ended(this);
    for (const listener of [...this.lossListeners]) listener();
    this.lossListeners.clear();
  }

  /** Ends the session and revokes its lease (deleting whatever is still on it). */
  retire(): Promise<unknown> {
    const wasLost = this.lost;
    this.end();
    if (wasLost || this.leaseId === undefined) return Promise.resolve();
    const revoke = withDeadline(this.owner.etcd.revoke(this.leaseId), CLEANUP_DEADLINE_MS, () => undefined).catch(
      () => undefined,
    );
    this.owner.background(revoke);
    return revoke;
  }

  private async keepAlive(): Promise<number> {
    const lease = await this.lease;
    const startedAt = monotonicNow();
    try {
      const ttl = await this.owner.etcd.keepAlive(lease.id, this.leaseTtlSeconds * 1000);
      this.renewed(startedAt, ttl);
      return ttl;
    } catch (error) {
      // Transient (a leader change, a slow answer): try again soon, well before the lease can run out.
      if (!this.lost) this.arm(Math.min(this.periodMs / 4, 250));
      throw error;
    }
  }

  private tick(): void {
    this.timer = undefined;
    if (this.lost) return;
    for (const [key, createRevision] of this.undeleted) {
      this.undeleted.delete(key);
      this.owner.background(this.deleteAndLeave(key, createRevision).catch(() => undefined));
    }
    if (this.names.size === 0 && monotonicNow() - (this.idleSince ?? monotonicNow()) >= this.periodMs) {
      void this.retire();
      return;
    }
    this.owner.background(this.refresh(this.periodMs / 2).catch(() => undefined));
    // Unanswered a period from now (a slow server), another goes out beside it, so the lease's validity keeps
    // counting from recent keepalives; an answer re-arms for a period after it (renewed()).
    if (!this.lost) this.arm(this.periodMs);
  }

  /** See the class comment: deletes, by create revision, the keys of holders that stopped renewing. */
  private dropUnrenewedHolders(): void {
    const now = monotonicNow();
    for (const state of this.holders) {
      // A holder with a lock-delay keeps its key that much longer, as its lease would after a crash.
      if (now - (state.renewedAt ?? now) <= (state.renewedFor ?? Infinity) + (state.lockDelay ?? 0)) continue;
      this.holders.delete(state);
      this.owner.background(this.deleteAndLeave(state.keyPath, state.createRevision).catch(() => undefined));
    }
  }

  /**
   * Deletes our key (by create revision when known, else by name: a name on our lease is ours) and only then
   * gives the name back, so no contender of ours reuses it while the delete is in flight. A failed delete
   * keeps the name reserved and is retried on each tick.
   */
  async deleteAndLeave(key: string, createRevision: string | undefined): Promise<boolean> {
    if (this.lost) return false;
    let deleted: boolean;
    try {
      const deletion =
        createRevision === undefined
          ? this.owner.etcd.deleteKey(key)
          : this.owner.etcd.deleteIfOurs(key, createRevision);
      deleted = await withDeadline(deletion, CLEANUP_DEADLINE_MS, deleteTimedOut);
    } catch (error) {
      if (!this.lost) this.undeleted.set(key, createRevision);
      throw error;
    }
    this.leave(key);
    return deleted;
  }

  private arm(delay: number): void {
    this.disarm();
    this.timer = setTimeout(() => this.tick(), Math.max(0, delay));
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
