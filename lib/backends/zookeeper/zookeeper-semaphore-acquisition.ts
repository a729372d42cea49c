import type { AcquireRequest, LockGrant } from '../lock-backend.interface';
import { ZooKeeperAcquisition } from './zookeeper-acquisition';
import type { AcquisitionContext, ContenderRecipe } from './zookeeper-queue';
import { asZooKeeperLockState, ZooKeeperLockState } from './zookeeper-lock-state';
import { LEASE_MARKER, lockPath, MUTEX_MARKER, SEMAPHORE_GATE, SEMAPHORE_LEASES } from './zookeeper-node-layout';

/**
 * One semaphore acquire or tryAcquire in the layout of Apache Curator's InterProcessSemaphoreV2 (see
 * zookeeper-node-layout), so Java and Nest holders of one path share its N permits:
 *
 *  - acquire: take the gate (a mutex under `<path>/locks`, queued FIFO like any lock), create our lease under
 *    `<path>/leases`, and count the leases; while there are more than N, ours included, watch the list and
 *    count again. Then leave the gate. Holding the gate while full means at most one waiter has a lease node,
 *    so a release always brings the count back to N for it; without the gate, two waiters' leases would keep
 *    the count above N after a release, for both of them.
 *  - tryAcquire: create a lease and count once, without the gate; more than N deletes it and answers null. A
 *    holder is always someone who counted at most N after creating its lease, and of N + 1 simultaneous holders
 *    the last to create would have counted them all, so the gate is not needed for safety. Nor can a try slip
 *    past a gate holder that is waiting: the waiter's lease is counted too.
 *
 * The fencing token is the lease's creation zxid. If our lease vanishes while we wait (session expiry), we
 * start again from the gate, since that session's gate node is gone too.
 */
export class ZooKeeperSemaphoreAcquisition {
  private readonly path: string;
  private current?: ZooKeeperAcquisition;
  private cancelledWith?: { error: unknown };

  constructor(
    private readonly ctx: AcquisitionContext,
    private readonly request: AcquireRequest,
    private readonly permits: number,
  ) {
    this.path = lockPath(request.namespace, request.key);
  }

  /** The backend is closing: reject with `error` and leave the gate and the leases. */
  cancel(error: unknown): void {
    this.cancelledWith ??= { error };
    this.current?.cancel(error);
  }

  async tryAcquire(): Promise<LockGrant | null> {
    const grant = await this.step(this.lease('tryAcquire')).tryAcquire();
    return grant;
  }

  async acquire(signal: AbortSignal): Promise<LockGrant> {
    for (;;) {
      const gate = await this.step(
        new ZooKeeperAcquisition(this.ctx, this.request, 'acquire', signal, this.gateRecipe()),
      ).acquire();
      try {
        const grant = await this.step(this.lease('acquire', signal)).acquireOnce();
        if (grant) return grant;
      } finally {
        this.leaveGate(asZooKeeperLockState(gate.state));
      }
    }
  }

  private step(attempt: ZooKeeperAcquisition): ZooKeeperAcquisition {
    if (this.cancelledWith) attempt.cancel(this.cancelledWith.error);
    this.current = attempt;
    return attempt;
  }

  private gateRecipe(): ContenderRecipe {
    return { marker: MUTEX_MARKER, nodeData: this.ctx.nodeData, parent: `${this.path}/${SEMAPHORE_GATE}` };
  }

  private lease(operation: 'acquire' | 'tryAcquire', signal?: AbortSignal): ZooKeeperAcquisition {
    const recipe: ContenderRecipe = {
      marker: LEASE_MARKER,
      nodeData: this.ctx.nodeData,
      parent: `${this.path}/${SEMAPHORE_LEASES}`,
      limit: this.permits,
    };
    return new ZooKeeperAcquisition(this.ctx, this.request, operation, signal, recipe);
  }

  /**
   * Deletes our gate node in the background, retrying through connection losses: a gate node left behind would
   * block every other acquirer of the semaphore for as long as our session lives. It ends with the session.
   */
  private leaveGate(gate: ZooKeeperLockState): void {
    this.ctx.track(this.ctx.ownNodes.removeWhileSession(gate.nodePath, gate.sessionId).catch(() => false));
  }
}
