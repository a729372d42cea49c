import { LockError } from './lock-error';

/**
 * A placeholder of a key template had no usable value for this request or call: missing, null, empty,
 * an object or an array. The lock is not taken (never `file:undefined`); over HTTP this becomes 400.
 */
export class UnresolvedPlaceholderError extends LockError {
  override readonly name = 'UnresolvedPlaceholderError';

  constructor(
    readonly template: string,
    /** The placeholder as written, e.g. `<<body.order.id>>`. */
    readonly placeholder: string,
    readonly problem: string,
  ) {
    super(
      `Cannot build the lock key ${JSON.stringify(template)}: ${placeholder} ${problem}. ` +
        `Send a string, number or boolean value for it.`,
    );
  }
}
