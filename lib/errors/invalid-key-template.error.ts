import { LockError } from './lock-error';

/** A `@WithLock` key template is malformed. Thrown while the app starts (at decoration), never per request. */
export class InvalidKeyTemplateError extends LockError {
  override readonly name = 'InvalidKeyTemplateError';

  constructor(
    readonly template: string,
    problem: string,
  ) {
    super(`Invalid lock key template ${JSON.stringify(template)}: ${problem}`);
  }
}
