import { LockError } from './lock-error';

/** A lock key was rejected before any server call: empty, too long, not a string, or not well-formed Unicode. */
export class InvalidLockKeyError extends LockError {
  override readonly name = 'InvalidLockKeyError';

  constructor(
    readonly key: unknown,
    problem: string,
  ) {
    super(`Invalid lock key ${describe(key)}: ${problem}`);
  }
}

function describe(key: unknown): string {
  if (typeof key !== 'string') return `(${key === null ? 'null' : typeof key})`;
  const shown = key.length > 60 ? `${key.slice(0, 60)}…` : key;
  return JSON.stringify(shown);
}
