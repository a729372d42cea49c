/** A write carried a lower fencing token than one the store already accepted: its writer lost the lock. */
export class StaleWriteError extends Error {
  override readonly name = 'StaleWriteError';

  constructor(
    readonly document: string,
    readonly fencingToken: bigint,
    readonly acceptedToken: bigint,
  ) {
    super(
      `Rejected a write to ${document} with fencing token ${fencingToken}: token ${acceptedToken} was already accepted, ` +
        `so this writer's lock had expired and someone else has held it since.`,
    );
  }
}
