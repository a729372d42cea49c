import { LockBackendError } from '../../errors';
import { backendErrorOf } from '../../errors/lock-backend.error';
import { delay, raceAbort } from '../../utils/abort';
import { retryBackoff } from '../../utils/backoff';
import { toZooKeeperBackendError } from './zookeeper-errors';
import type { ZooKeeperSession } from './zookeeper-session';

/**
 * How one acquisition (ZooKeeperAcquisition) stops early: the caller's signal or the backend's cancel() aborts
 * it, and every server call and retry pause turns that abort into the error its caller should hear.
 */
export class AcquisitionControl {
  private readonly controller = new AbortController();
  private readonly detachUserSignal: () => void;
  private cancelledWith?: { error: unknown };
  /** Our node is in the queue: the key is busy, as far as we know. Set by QueueEntry.join(), cleared when gone. */
  queued = false;

  constructor(
    private readonly session: ZooKeeperSession,
    private readonly operation: 'acquire' | 'tryAcquire',
    userSignal?: AbortSignal,
  ) {
    const forward = () => this.controller.abort(userSignal!.reason);
    if (userSignal?.aborted) forward();
    else userSignal?.addEventListener('abort', forward, { once: true });
    this.detachUserSignal = () => userSignal?.removeEventListener('abort', forward);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The backend is closing: reject with `error` and leave the queue. */
  cancel(error: unknown): void {
    this.cancelledWith ??= { error };
    this.controller.abort(error);
  }

  /**
   * Every server call: an abort while the call is outstanding rejects at once (node-zookeeper-client queues
   * requests while disconnected, without limit). Once our node is queued and the connection is up, the
   * server is answering and the key is simply busy: the wait's own reason. Otherwise the server did not
   * answer in time: a LockBackendError, so that "busy" and "unreachable" stay distinct.
   */
  server<T>(work: Promise<T>): Promise<T> {
    return raceAbort(work, this.signal, () => {
      if (this.cancelledWith) return this.cancelledWith.error;
      if (this.queued && this.session.isConnected) return this.signal.reason;
      return backendErrorOf(
        {
          kind: 'zookeeper',
          address: this.session.address,
          describeConnection: () => this.session.describeConnection(),
        },
        this.operation,
        'the wait ended while a request to ZooKeeper was still outstanding',
        this.signal.reason,
      );
    });
  }

  /** What a failed acquisition rejects with: the abort's own reason as it is, anything else as a backend error. */
  failure(error: unknown): unknown {
    if (this.signal.aborted && error === this.signal.reason) return error;
    return toZooKeeperBackendError(this.session.address, this.operation, error);
  }

  /** Waits before a retry. An abort now means ZooKeeper kept failing, so it is a backend error. */
  async pauseAfterFailure(failures: number, lastError: unknown): Promise<void> {
    // No retry can succeed on a client the app closed: fail now rather than at the end of the wait.
    if (this.session.clientClosedByApp) {
      throw new LockBackendError(
        'zookeeper',
        this.session.address,
        this.operation,
        'the ZooKeeper client passed to the backend was closed while this call waited in the queue',
        { cause: lastError },
      );
    }
    try {
      await delay(retryBackoff(failures), this.signal);
    } catch {
      throw this.cancelledWith
        ? this.cancelledWith.error
        : new LockBackendError(
            'zookeeper',
            this.session.address,
            this.operation,
            `ZooKeeper kept failing while we waited in the queue (last error: ${(lastError as Error)?.message ?? String(lastError)})`,
            { cause: lastError },
          );
    }
  }

  /** Stops following the caller's signal. */
  dispose(): void {
    this.detachUserSignal();
  }
}
