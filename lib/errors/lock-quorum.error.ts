import { LockBackendError } from './lock-backend.error';

/** One Redis instance that did not answer usefully, and why. */
export interface InstanceFailure {
  /** `host:port` of the instance, never credentials. */
  readonly address: string;
  readonly error: Error;
}

/**
 * Too few Redlock instances answered for a majority: a transport problem, not a busy lock (that one is
 * LockTimeoutError). Names every instance that failed. `instanceof LockBackendError` still catches it.
 */
export class LockQuorumError extends LockBackendError {
  override readonly name = 'LockQuorumError';

  constructor(
    address: string,
    operation: string,
    /** How many instances must agree: floor(N / 2) + 1. */
    readonly quorum: number,
    /** N, the number of instances. */
    readonly instances: number,
    readonly failures: readonly InstanceFailure[],
  ) {
    super(
      'redlock',
      address,
      operation,
      `${failures.length} of ${instances} Redis instances failed, so no majority of ${quorum} could agree: ` +
        failures.map((failure) => `${failure.address} (${failure.error.message})`).join('; '),
    );
  }

  /** The addresses of the instances that failed. */
  get failedAddresses(): string[] {
    return this.failures.map((failure) => failure.address);
  }
}
