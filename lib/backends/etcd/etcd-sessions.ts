import { CLEANUP_DEADLINE_MS } from './etcd-acquisition';
import type { GrantedLease } from './etcd-lease';
import type { EtcdLockClient } from './etcd-lock-client';

interface Session {
  readonly ttlSeconds: number;
  readonly lease: Promise<GrantedLease>;
  /** Held locks on this lease (and joins under way). */
  users: number;
  leaseId?: string;
}

/**
 * Shared leases for held locks, one per ttl in seconds, as Go's `concurrency.Session` shares one lease among a
 * session's locks. A lock acquires on a lease of its own (the queue needs that while it waits); at its first
 * renewal it moves onto the session lease of its ttl, so thousands of held locks need one keepalive per period
 * instead of one each. Locks released before their first renewal never move. Counted: the lease is revoked when
 * its last lock leaves; a session whose lease is gone is forgotten, so later locks get a new one.
 */
export class EtcdSessions {
  private readonly byTtl = new Map<number, Session>();
  private readonly byLease = new Map<string, Session>();

  constructor(
    private readonly etcd: EtcdLockClient,
    private readonly runInBackground: (work: Promise<unknown>) => void,
  ) {}

  /** The session lease for `ttlSeconds`, granted on first use. Counts `users`: give each back with leave(). */
  async join(ttlSeconds: number, users = 1): Promise<GrantedLease> {
    let session = this.byTtl.get(ttlSeconds);
    if (!session) {
      session = { ttlSeconds, lease: this.etcd.grant(ttlSeconds), users: 0 };
      this.byTtl.set(ttlSeconds, session);
    }
    session.users += users;
    try {
      const lease = await session.lease;
      session.leaseId = lease.id;
      this.byLease.set(lease.id, session);
      return lease;
    } catch (error) {
      session.users -= users;
      this.forget(session);
      throw error;
    }
  }

  /** One user of the lease is gone (released, lost or moved); the last one revokes it. */
  leave(leaseId: string): void {
    const session = this.byLease.get(leaseId);
    if (!session) return;
    session.users -= 1;
    if (session.users > 0) return;
    this.forget(session);
    this.runInBackground(this.etcd.revoke(leaseId, { deadline: Date.now() + CLEANUP_DEADLINE_MS }));
  }

  /** The lease expired or was revoked: its locks are lost, and new ones must not join it. */
  expired(leaseId: string): void {
    const session = this.byLease.get(leaseId);
    if (session) this.forget(session);
  }

  private forget(session: Session): void {
    if (this.byTtl.get(session.ttlSeconds) === session) this.byTtl.delete(session.ttlSeconds);
    if (session.leaseId !== undefined && this.byLease.get(session.leaseId) === session) this.byLease.delete(session.leaseId);
  }
}
