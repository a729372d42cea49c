import type { RedlockInstance } from './redlock-instance';

export type Answer<T> =
  | { readonly instance: RedlockInstance; readonly ok: true; readonly value: T }
  | { readonly instance: RedlockInstance; readonly ok: false; readonly error: Error };

export interface AskOptions<T> {
  /** How long each instance may take; after that it counts as failed ("no answer within ..."). */
  readonly timeout: number;
  /** True once the answers so far decide the outcome: the rest are not waited for. */
  readonly settled: (answers: readonly Answer<T>[]) => boolean;
  /** Resolves early, with the answers so far, when this aborts. */
  readonly signal?: AbortSignal;
  /** A success that arrived after its instance was no longer waited for (timed out, decided, aborted). */
  readonly onLate?: (instance: RedlockInstance, value: T) => void;
}

/**
 * Sends one request to every instance at once and resolves as soon as the outcome is known: `settled` says so,
 * every instance answered or timed out, or the signal aborted. The requests still running carry on; a late
 * success goes to `onLate` (an acquire uses it to release a lock nobody will hold).
 */
export function askAll<T>(
  instances: readonly RedlockInstance[],
  ask: (instance: RedlockInstance) => Promise<T>,
  options: AskOptions<T>,
): Promise<Answer<T>[]> {
  return new Promise((resolve) => {
    const answers: Answer<T>[] = [];
    const timers: NodeJS.Timeout[] = [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      timers.forEach(clearTimeout);
      options.signal?.removeEventListener('abort', finish);
      resolve(answers);
    };
    const answered = new Set<RedlockInstance>();
    /** Counts an answer unless its instance already has one or the round is over; tells whether it counted. */
    const record = (answer: Answer<T>): boolean => {
      if (done || answered.has(answer.instance)) return false;
      answered.add(answer.instance);
      answers.push(answer);
      if (answers.length === instances.length || options.settled(answers)) finish();
      return true;
    };
    if (options.signal?.aborted) return finish();
    options.signal?.addEventListener('abort', finish, { once: true });
    for (const instance of instances) {
      if (done) break;
      const unreachable = instance.unreachable();
      if (unreachable) {
        record({ instance, ok: false, error: unreachable });
        continue;
      }
      let work: Promise<T>;
      try {
        work = ask(instance);
      } catch (error) {
        record({ instance, ok: false, error: asError(error) });
        continue;
      }
      const timer = setTimeout(
        () => record({ instance, ok: false, error: noAnswer(instance, options.timeout) }),
        options.timeout,
      );
      timers.push(timer);
      work.then(
        (value) => {
          clearTimeout(timer);
          if (!record({ instance, ok: true, value })) options.onLate?.(instance, value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          record({ instance, ok: false, error: asError(error) });
        },
      );
    }
  });
}

export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** floor(N / 2) + 1: any two majorities share at least one instance. */
export function majorityOf(instances: number): number {
  return Math.floor(instances / 2) + 1;
}

/** "No answer", with the connection's status when it is not up: the likely reason. */
function noAnswer(instance: RedlockInstance, timeout: number): Error {
  const status = instance.connectionStatus();
  return new Error(`no answer within ${timeout} ms${status ? `, connection ${status}` : ''}`);
}
