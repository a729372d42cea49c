import type { AcquireRequest, LockGrant } from '../lock-backend.interface';
import { backendErrorOf, LockBackendError } from '../../errors/lock-backend.error';
import { LockError } from '../../errors/lock-error';
import { raceAbort } from '../../utils/abort';
import type { BackendLifecycle } from '../shared/backend-lifecycle';
import { parseAcquireReply } from './acquire.lua';
import { acquireCall, releaseCall, runCall, type HandoffTarget, type WaitStyle } from './lock-calls';
import type { RedisPort } from './port/redis-port';
import type { RedisTuning } from './redis-options';
import { validityEnd } from './validity';

/** The outcome of one acquire script run. */
export type Attempt =
  | { readonly granted: LockGrant }
  /** `sentAt` (ours) and `serverTime` (the server's ms, when told): for a handoff's validity. */
  | { readonly busyFor: number; readonly sentAt: number; readonly serverTime?: number }
  /** Granted, but the answer came after the lock's validity had passed; it was released again. */
  | { readonly tooLateBy: number };

export type BusyAttempt = Extract<Attempt, { busyFor: number }>;

/** A waiter's acquire call in flight: its queue entry is only taken back after it settled. */
export interface InFlight {
  call?: Promise<unknown>;
  /**
   * The server already answered this acquire (the key was busy). A deadline that then passes while a later
   * call is still in flight means "still busy, the server is just slow", not "unreachable", unless that call went
   * unanswered for SILENT_SERVER_MS (a stopped or frozen server keeps its connection open and its status ready).
   */
  answered?: boolean;
}

/** A call in flight this long at a waiter's deadline means the server stopped answering, not that it is slow. */
const SILENT_SERVER_MS = 1_000;

/**

/**
 * The server calls the backend and its waiters share: one acquire attempt, the quiet releases that give back
 * grants nobody will hold, and the errors that say what we know about the connection.
 */
export class RedisCommands {
  readonly kind = 'redis';
  /** Our own client's last connection error, for "why did it not answer" messages. */
  lastConnectionError?: Error;

  constructor(
    readonly client: RedisPort,
    readonly tuning: RedisTuning,
    readonly lifecycle: BackendLifecycle,
  ) {}

  get fifo(): boolean {
    return this.tuning.fairness === 'fifo';
  }

  /**
   * Runs the acquire script once. `validUntil` counts from just before this request was sent.
   * With a `signal`, an abort while the server has not answered rejects with a LockBackendError; if the
   * script then succeeds anyway, that grant is released, so nothing is ever granted after the abort.
   */
  async attempt(
    request: AcquireRequest,
    operation: string,
    style: WaitStyle,
    signal?: AbortSignal,
    inFlight?: InFlight,
    handoff?: HandoffTarget,
  ): Promise<Attempt> {
    const startedAt = performance.now();
    const call = runCall(
      this.client,
      acquireCall(request, style, this.tuning.waiterTtl, this.tuning.fenceRetention, operation === 'acquire', handoff),
    );
    if (inFlight) inFlight.call = call;
    let abortedFirst = false;
    let reply: unknown;
    try {
      reply = signal
        ? await raceAbort(call, signal, () => {
            abortedFirst = true;
            const silent = performance.now() - startedAt >= SILENT_SERVER_MS;
            return inFlight?.answered && !silent ? signal.reason : this.noAnswerError(operation, signal);
          })
        : await call;
    } catch (error) {
      if (abortedFirst) this.releaseIfGranted(call, request);
      throw abortedFirst ? error : this.toBackendError(operation, error);
    }
    return this.outcomeOf(reply, request, startedAt, operation, signal, inFlight);
  }

  /**
   * One try that does not wait (tryAcquire, and LockService's first attempt): the grant, or null when the key is
   * busy. One reaction on the script's reply, no async frames: this is every uncontended acquire. Errors name
   * `operation`, the user's call.
   */
  tryOnce(request: AcquireRequest, operation: 'acquire' | 'tryAcquire'): Promise<LockGrant | null> {
    const startedAt = performance.now();
    const call = runCall(
      this.client,
      acquireCall(request, 'none', this.tuning.waiterTtl, this.tuning.fenceRetention, false),
    );
    return call.then(
      (reply) => {
        const outcome = this.outcomeOf(reply, request, startedAt, operation);
        // A grant that came after its validity was released again (outcomeOf): busy, as docs/options.md says.
        return 'granted' in outcome ? outcome.granted : null;
      },
      (error: unknown) => {
        throw this.toBackendError(operation, error);
      },
    );
  }

  /** What an acquire script's reply means for `request`, sent at `startedAt`: see attempt(). */
  private outcomeOf(
    reply: unknown,
    request: AcquireRequest,
    startedAt: number,
    operation: string,
    signal?: AbortSignal,
    inFlight?: InFlight,
  ): Attempt {
    const parsed = parseAcquireReply(reply);
    if (!parsed) throw this.error(operation, `unexpected reply from the acquire script: ${JSON.stringify(reply)}`);
    if (inFlight) inFlight.answered = true;
    if (!parsed.granted) return { busyFor: parsed.retryIn, sentAt: startedAt, serverTime: parsed.serverTime };
    const validUntil = validityEnd(startedAt, request.ttl);
    const now = performance.now();
    if (signal?.aborted || validUntil <= now) {
      this.lifecycle.track(this.releaseQuietly(request));
      if (signal?.aborted) throw signal.reason;
      return { tooLateBy: now - validUntil };
    }
    return { granted: { fencingToken: parsed.fencingToken, validUntil } };
  }

  releaseIfGranted(call: Promise<unknown>, request: AcquireRequest): void {
    this.lifecycle.track(
      call.then(
        (reply) => (parseAcquireReply(reply)?.granted ? this.releaseQuietly(request) : undefined),
        () => undefined,
      ),
    );
  }

  /** Best effort: if this fails, the lock expires after its ttl. */
  releaseQuietly(request: AcquireRequest): Promise<unknown> {
    return runCall(this.client, releaseCall(request, this.fifo, request.token, this.tuning.fenceRetention)).catch(
      () => undefined,
    );
  }

  /**
   * `work` mapped by `onReply` (when given), with its failure as a LockBackendError naming the operation and what we
   * know of the connection: one reaction, on the path of every release.
   */
  call<T, R = T>(operation: string, work: Promise<T>, onReply?: (reply: T) => R): Promise<R> {
    return work.then(onReply, (error: unknown) => {
      throw this.toBackendError(operation, error);
    });
  }

  noAnswerError(operation: string, signal: AbortSignal): unknown {
    // close() aborts waiters with its own LockBackendError; keep it.
    if (signal.reason instanceof LockBackendError) return signal.reason;
    return this.error(
      operation,
      `no answer from the server before the deadline${this.connectionHint()}`,
      signal.reason,
    );
  }

  toBackendError(operation: string, error: unknown): LockError {
    if (error instanceof LockError) return error;
    return this.error(operation, `${messageOf(error)}${this.connectionHint()}`, error);
  }

  /** What we know about the connection, for "why did it not answer" messages: ' (...)', or '' when it is up. */
  connectionHint(): string {
    const state = this.connectionState();
    return state ? ` (${state})` : '';
  }

  /** The connection's status and last error while it is not ready (LockBackend.describeConnection). */
  connectionState(): string | undefined {
    const status = this.client.status();
    if (status === 'ready') return undefined;
    const hints: string[] = [];
    if (status) hints.push(`connection ${status}`);
    if (this.lastConnectionError) hints.push(`last connection error: ${this.lastConnectionError.message}`);
    return hints.length > 0 ? hints.join('; ') : undefined;
  }

  error(operation: string, detail: string, cause?: unknown): LockBackendError {
    return backendErrorOf({ kind: this.kind, address: this.client.address }, operation, detail, cause);
  }
}

export function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.message) return error.message;
  // node-redis' TimeoutError (a command `timeout` set on its client ran out) has no message of its own.
  return error.name === 'TimeoutError' ? "no reply within the client's command timeout (TimeoutError)" : error.name;
}
