import { retryBackoff } from '../utils/backoff';

/** Consecutive failed reads after which observing gives up and errors (about 8 s of backoff). */
const MAX_OBSERVE_FAILURES = 10;

/**
 * An observer's failed reads in a row. It backs off between them and gives up after MAX_OBSERVE_FAILURES, so a
 * server that stays away ends the observation with an error rather than a silent retry loop.
 */
export class ObserveFailures {
  private count = 0;

  /** A read succeeded. */
  reset(): void {
    this.count = 0;
  }

  /** A read failed: the pause before the next one, ms, or undefined when it is time to give up. */
  next(): number | undefined {
    return ++this.count >= MAX_OBSERVE_FAILURES ? undefined : retryBackoff(this.count);
  }
}
