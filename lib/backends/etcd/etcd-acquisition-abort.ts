import { LockBackendError } from '../../errors';
import { toEtcdBackendError } from './etcd-lock-client';

/** What an acquisition is for, as its errors name it: the caller's call, or an election's campaign. */
export type EtcdOperation = 'acquire' | 'tryAcquire' | 'election campaign';

/** After an abort, how long a call still outstanding may answer before we take etcd for unresponsive. */
const ANSWER_GRACE_MS = 100;

/**
 * How one acquisition ends early (the caller's signal, or the backend's close()) and what that means for the
 * server calls it has outstanding. An uncontended acquire makes no AbortController and adds no listener per
 * call: an AbortSignal exists only once something waits on one (a watch, a backoff).
 */
export class AcquisitionAbort {
  /** Set once aborted: the caller's reason, or close()'s error. */
  private abortedWith?: { reason: unknown };
  /** Set when close() cancelled us, even after the caller's abort: what every pending call then rejects with. */
  private cancelledWith?: { error: unknown };
  private controller?: AbortController;
  /** Outstanding server calls, told of the abort. */
  private readonly onAbort = new Set<() => void>();
  private readonly detachUserSignal: () => void;

  constructor(
    private readonly address: string,
    private readonly operation: EtcdOperation,
    userSignal?: AbortSignal,
  ) {
    if (!userSignal) {
      this.detachUserSignal = () => undefined;
      return;
    }
    const forward = () => this.abort(userSignal.reason);
    if (userSignal.aborted) forward();
    else userSignal.addEventListener('abort', forward, { once: true });
    this.detachUserSignal = () => userSignal.removeEventListener('abort', forward);
  }

  get aborted(): boolean {
    return this.abortedWith !== undefined;
  }

  /** What an aborted acquisition rejects with: close()'s error if it cancelled us, else the caller's reason. */
  get reason(): unknown {
    return this.cancelledWith ? this.cancelledWith.error : this.abortedWith?.reason;
  }

  /** close()'s error, when the backend cancelled us. */
  get cancelled(): { error: unknown } | undefined {
    return this.cancelledWith;
  }

  /** A signal for what waits (watches, backoffs); made on first use. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortedWith) this.controller.abort(this.abortedWith.reason);
    }
    return this.controller.signal;
  }

  /** The backend is closing: every call and wait rejects with `error`. */
  cancel(error: unknown): void {
    this.cancelledWith ??= { error };
    this.abort(error);
  }

  /** The acquisition is over: stop listening to the caller's signal. */
  detach(): void {
    this.detachUserSignal();
  }

  /**
   * Every server call: errors become LockBackendErrors. An abort while the call is outstanding gives it
   * ANSWER_GRACE_MS to answer: if it does, the wait simply ended (the abort's reason); if not, etcd is not
   * answering (etcd3 keeps retrying against a dead server), and that is a LockBackendError, not a timeout.
   */
  call<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let grace: NodeJS.Timeout | undefined;
      const onAbort = () => {
        if (this.cancelledWith) return reject(this.cancelledWith.error);
        grace = setTimeout(
          () =>
            reject(
              new LockBackendError(
                'etcd',
                this.address,
                this.operation,
                'the wait ended while a request to etcd was still outstanding',
                { cause: this.abortedWith?.reason },
              ),
            ),
          ANSWER_GRACE_MS,
        );
      };
      if (this.abortedWith) onAbort();
      else this.onAbort.add(onAbort);
      work.then(
        (value) => {
          clearTimeout(grace);
          this.onAbort.delete(onAbort);
          if (this.abortedWith) reject(this.reason);
          else resolve(value);
        },
        (error: unknown) => {
          clearTimeout(grace);
          this.onAbort.delete(onAbort);
          reject(toEtcdBackendError(this.address, this.operation, error));
        },
      );
    });
  }

  private abort(reason: unknown): void {
    if (this.abortedWith) return;
    this.abortedWith = { reason };
    this.controller?.abort(reason);
    for (const listener of [...this.onAbort]) listener();
    this.onAbort.clear();
  }
}
