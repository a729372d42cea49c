import type { HeldLock } from '../lock-backend.interface';
import { monotonicNow } from '../../utils/clock';
import { contenderValue } from './etcd-key-layout';
import { EtcdLockClient, toEtcdBackendError } from './etcd-lock-client';
import { asEtcdLockState, EtcdLockState, leaseSecondsFor, validUntil } from './etcd-lock-state';
import type { EtcdSessions } from './etcd-sessions';

interface Renewal {
  readonly index: number;
  readonly lock: HeldLock;
  readonly state: EtcdLockState;
  readonly ttl: number;
}

/**
 * Renewal and release of held locks, all of which live on session leases (EtcdSessions). A renewal is one
 * keepalive per session lease in the batch plus one read txn per 128 keys checking that each key still has
 * our create revision and lease; a release is one delete by create revision (never by name alone,
 * etcd#22082). A lock whose session lease is gone is lost, whichever lock's renewal finds it out.
 */
export class EtcdHeldLocks {
  constructor(
    private readonly etcd: EtcdLockClient,
    private readonly sessions: EtcdSessions,
  ) {}

  async extendMany(items: readonly { lock: HeldLock; ttl: number }[]): Promise<(number | null | Error)[]> {
    const results = new Array<number | null | Error>(items.length);
    const batch: Renewal[] = [];
    const singles: Promise<void>[] = [];
    items.forEach(({ lock, ttl }, index) => {
      const state = asEtcdLockState(lock.state);
      const seconds = leaseSecondsFor(ttl, state.lockDelay);
      if (seconds === state.requestedTtlSeconds || seconds === state.leaseTtlSeconds)
        batch.push({ index, lock, state, ttl });
      else
        singles.push(
          this.moveToSession(lock, state, ttl, seconds).then(
            (r) => void (results[index] = r),
            (e: Error) => void (results[index] = e),
          ),
        );
    });
    if (batch.length > 0) await this.renew(batch, results);
    await Promise.all(singles);
    return results;
  }

  async release(lock: HeldLock): Promise<boolean> {
    const state = asEtcdLockState(lock.state);
    const session = this.sessions.of(state.leaseId);
    // The session lease is gone, and our key with it; a delete by revision costs nothing wrong if not.
    if (!session) return this.etcd.deleteIfOurs(state.keyPath, state.createRevision);
    // Dropped already (lost, or not renewed within its ttl): the key is not ours to delete any more.
    if (!session.holders.delete(state)) return false;
    return session.deleteAndLeave(state.keyPath, state.createRevision);
  }

  private async renew(batch: readonly Renewal[], results: (number | null | Error)[]): Promise<void> {
    const startedAt = monotonicNow();
    try {
      const leaseIds = [...new Set(batch.map(({ state }) => state.leaseId))];
      const longestLease = Math.max(...batch.map(({ state }) => state.leaseTtlSeconds));
      const [leaseTtls, keys] = await Promise.all([
        this.etcd.keepAliveMany(leaseIds, longestLease * 1000),
        this.etcd.readKeys(batch.map(({ state }) => state.keyPath)),
      ]);
      batch.forEach(({ index, state, ttl }, position) => {
        const leaseTtl = leaseTtls.get(state.leaseId) ?? 0;
        const key = keys[position];
        const session = this.sessions.of(state.leaseId);
        const ours =
          leaseTtl > 0 &&
          key !== undefined &&
          key.createRevision === state.createRevision &&
          key.leaseId === state.leaseId &&
          session?.holders.has(state) === true;
        if (!ours) {
          results[index] = null;
          // Lost: give the name back (deleting our key by its revision, in case only the check failed).
          if (session?.holders.delete(state))
            this.sessions.background(
              session.deleteAndLeave(state.keyPath, state.createRevision).catch(() => undefined),
            );
          return;
        }
        state.leaseTtlSeconds = leaseTtl;
        state.renewedAt = startedAt;
        state.renewedFor = ttl;
        results[index] = validUntil(startedAt, ttl, leaseTtl);
      });
      // After this batch's own holders counted as renewed: renewed() drops those not renewed within their ttl.
      for (const id of leaseIds) this.sessions.of(id)?.renewed(startedAt, leaseTtls.get(id) ?? 0);
    } catch (error) {
      const failure = toEtcdBackendError(this.etcd.address, 'extend', error) as Error;
      for (const { index } of batch) results[index] = failure;
    }
  }

  /**
   * Another ttl: a lease's TTL is fixed, so the key moves onto a session of the new ttl (one put that keeps its
   * create revision, so ownership and fencing token stay). The key keeps its name, which embeds the old lease
   * id: the old session then takes no new contenders (one of them could be given that name) and retires once
   * empty. If the move's outcome is unknown, our key is deleted rather than left on a lease we do not track.
   */
  private async moveToSession(
    lock: HeldLock,
    state: EtcdLockState,
    ttl: number,
    seconds: number,
  ): Promise<number | null> {
    const seat = await this.sessions.join(seconds, () => state.keyPath);
    let moved: boolean;
    try {
      [moved] = await Promise.all([
        this.etcd.rebind(state.keyPath, state.createRevision, contenderValue(lock), seat.leaseId),
        seat.session.ensureFresh(),
      ]);
    } catch (error) {
      this.sessions.background(seat.session.deleteAndLeave(state.keyPath, state.createRevision).catch(() => undefined));
      throw toEtcdBackendError(this.etcd.address, 'extend', error);
    }
    if (!moved) {
      seat.session.leave(state.keyPath);
      return null;
    }
    const old = this.sessions.of(state.leaseId);
    if (old) {
      old.closedForJoins = true;
      old.holders.delete(state);
      old.leave(state.keyPath);
    }
    state.leaseId = seat.leaseId;
    state.leaseTtlSeconds = seat.session.leaseTtlSeconds;
    state.requestedTtlSeconds = seconds;
    state.renewedAt = seat.session.aliveSince;
    state.renewedFor = ttl;
    seat.session.holders.add(state);
    return validUntil(seat.session.aliveSince, ttl, seat.session.leaseTtlSeconds);
  }
}
