import type { EtcdLockClient } from './etcd-lock-client';
import { EtcdSession, SessionOwner } from './etcd-session';

/** A contender's place on a session: its key name there is reserved until it leaves. */
export interface Seat {
  readonly session: EtcdSession;
  readonly leaseId: string;
  readonly key: string;
}

/**
 * The backend's session leases, a few per ttl in seconds. A contender (waiter or holder) takes a seat on the
 * first session of its ttl whose lease does not carry its key name yet, so locks on many names share one lease,
 * and several contenders for one name in this process (each needs its own key, `<prefix><lease hex>`) take
 * one session each. An uncontended acquire + release is then one put and one delete: no lease grant or revoke.
 */
export class EtcdSessions implements SessionOwner {
  private readonly byTtl = new Map<number, EtcdSession[]>();
  private readonly byLease = new Map<string, EtcdSession>();

  constructor(
    readonly etcd: EtcdLockClient,
    readonly background: (work: Promise<unknown>) => void,
  ) {}

  /** The live session whose lease is `leaseId`, if any. */
  of(leaseId: string): EtcdSession | undefined {
    return this.byLease.get(leaseId);
  }

  /**
   * join() without a wait, for the usual case: the session join() would try first already has its lease.
   * Undefined when it would have to wait (a grant in flight, or a new session).
   */
  seatNow(ttlSeconds: number, keyFor: (leaseId: string) => string): Seat | undefined {
    const session = this.byTtl.get(ttlSeconds)?.find((candidate) => !candidate.lost && !candidate.closedForJoins);
    if (session?.leaseId === undefined) return undefined;
    const key = keyFor(session.leaseId);
    if (session.names.has(key)) return undefined;
    session.names.add(key);
    return { session, leaseId: session.leaseId, key };
  }

  /** A seat for the key `keyFor(lease id)` on a session of `ttlSeconds`. Give it back with session.leave(key). */
  async join(ttlSeconds: number, keyFor: (leaseId: string) => string): Promise<Seat> {
    const tried = new Set<EtcdSession>();
    for (;;) {
      const session = this.pick(ttlSeconds, keyFor, tried);
      tried.add(session);
      const lease = await session.lease;
      const key = keyFor(lease.id);
      // Checked again after the wait: another contender for the same name may have taken it meanwhile.
      if (session.lost || session.closedForJoins || session.names.has(key)) continue;
      session.names.add(key);
      return { session, leaseId: lease.id, key };
    }
  }

  /** SessionOwner: forgets a session whose lease is gone, so later contenders get a new one. */
  ended(session: EtcdSession): void {
    const list = this.byTtl.get(session.ttlSeconds);
    const index = list?.indexOf(session) ?? -1;
    if (index >= 0) list!.splice(index, 1);
    if (list?.length === 0) this.byTtl.delete(session.ttlSeconds);
    if (session.leaseId !== undefined && this.byLease.get(session.leaseId) === session)
      this.byLease.delete(session.leaseId);
  }

  /** Revokes every session's lease (their keys go with them). For close(), after the waiters have left. */
  closeAll(): Promise<unknown> {
    const sessions = [...this.byTtl.values()].flat();
    return Promise.allSettled(sessions.map((session) => session.lease.then(() => session.retire())));
  }

  /** A session to try: one with the name free (or a grant still pending), else a new one. */
  private pick(ttlSeconds: number, keyFor: (leaseId: string) => string, tried: ReadonlySet<EtcdSession>): EtcdSession {
    const list = this.byTtl.get(ttlSeconds) ?? [];
    for (const session of list) {
      if (tried.has(session) || session.lost || session.closedForJoins) continue;
      if (session.leaseId === undefined || !session.names.has(keyFor(session.leaseId))) return session;
    }
    const session = new EtcdSession(this, ttlSeconds);
    list.push(session);
    this.byTtl.set(ttlSeconds, list);
    void session.lease.then(
      (lease) => {
        if (!session.lost) this.byLease.set(lease.id, session);
      },
      () => undefined,
    );
    return session;
  }
}
