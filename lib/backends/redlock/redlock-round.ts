import type { InstanceFailure, LockQuorumError } from '../../errors/lock-quorum.error';
import type { AcquireRequest, LockGrant } from '../lock-backend.interface';
import { parseAcquireReply, type AcquireReply } from '../redis/acquire.lua';
import { runCall, type ScriptCall } from '../redis/lock-calls';
import { validityEnd } from '../redis/validity';
import { askAll } from './ask-all';
import { redlockAcquireCall, redlockReleaseCall, type WaiterTicket } from './redlock-calls';
import { agreeOnFence } from './redlock-fencing';
import type { RedlockInstance } from './redlock-instance';
import { failuresOf, type RedlockSet } from './redlock-set';
import type { SentCalls } from './sent-calls';

/** What one round of acquire requests came to. */
export type Round =
  /** `grantedBy`: the instances that granted; the others may have answered busy (and kept a waiter's entry). */
  | { readonly type: 'granted'; readonly grant: LockGrant; readonly grantedBy: readonly RedlockInstance[] }
  /** `split`: we got some instances but not a majority (contenders split the vote). */
  | { readonly type: 'busy'; readonly retryIn: number; readonly split: boolean }
  | { readonly type: 'unreachable'; readonly error: LockQuorumError }
  /** A majority granted, but only after the validity had passed; released again. */
  | { readonly type: 'too-late'; readonly by: number }
  /** The signal aborted before the round was decided; `failures` includes those that had not answered. */
  | { readonly type: 'aborted'; readonly failures: InstanceFailure[] };

export interface RoundOptions {
  readonly operation: 'acquire' | 'tryAcquire';
  readonly signal?: AbortSignal;
  /** A waiter's acquire calls and clean-ups, so that taking its entry back runs behind them. */
  readonly sent?: SentCalls;
  /** Set for a waiter: a busy instance keeps its place in line, and a grant it gives back keeps it too. */
  readonly waiter?: WaiterTicket;
}

/**
 * One acquire request to every instance, measured from just before it was sent. Decided as soon as a majority
 * granted or can no longer grant. Partial grants, and grants that come after the round, are released; the
 * promise `cleanup` settles once the partial grants are.
 */
export async function acquireRound(
  set: RedlockSet,
  request: AcquireRequest,
  options: RoundOptions,
): Promise<{ round: Round; cleanup: Promise<unknown> }> {
  const { signal, sent, waiter } = options;
  const call = redlockAcquireCall(request, set.settings.fenceRetention, waiter);
  // An instance that takes longer than half the ttl could only grant a lock with little validity left.
  const timeout = Math.max(1, Math.min(set.settings.requestTimeout, request.ttl / 2));
  const startedAt = performance.now();
  let won = false;
  const answers = await askAll(set.instances, (instance) => acquireOn(instance, call, sent), {
    timeout,
    signal,
    settled: (so) => set.acquireDecided(so, (reply) => reply.granted),
    // Not requeued: the waiter may have left the line meanwhile, and this must not put it back. After a won
    // round it wakes nobody: we hold a majority, so a waiter woken there could only lose a round; our release
    // wakes it where we hold.
    onLate: (instance, reply) =>
      reply.granted && void set.cleanUp(instance, redlockReleaseCall(request, won ? 'quietly' : undefined), sent),
  });
  const granted = answers.flatMap((answer) =>
    answer.ok && answer.value.granted ? [{ instance: answer.instance, token: answer.value.fencingToken }] : [],
  );
  won = granted.length >= set.quorum;
  const giveBack = () =>
    Promise.all(granted.map(({ instance }) => set.cleanUp(instance, redlockReleaseCall(request, waiter), sent)));
  if (signal?.aborted || granted.length < set.quorum) {
    const cleanup = giveBack();
    if (signal?.aborted) return { round: { type: 'aborted', failures: set.failuresAndSilent(answers) }, cleanup };
    if (set.instances.length - set.quorum < failuresOf(answers).length) {
      return { round: { type: 'unreachable', error: set.quorumError(options.operation, answers) }, cleanup };
    }
    const hints = answers.flatMap((answer) =>
      answer.ok && !answer.value.granted && answer.value.retryIn >= 0 ? [answer.value.retryIn] : [],
    );
    const retryIn = hints.length > 0 ? Math.min(...hints) : -1;
    return { round: { type: 'busy', retryIn, split: granted.length > 0 }, cleanup };
  }
  const agreed = await agreeOnFence(request, granted, set.quorum, timeout, set.settings.fenceRetention);
  const validUntil = validityEnd(startedAt, request.ttl, set.settings.driftFactor);
  const now = performance.now();
  if ('failures' in agreed || validUntil <= now || signal?.aborted) {
    const cleanup = giveBack();
    if (signal?.aborted) return { round: { type: 'aborted', failures: [] }, cleanup };
    if ('failures' in agreed) {
      return { round: { type: 'unreachable', error: set.quorumErrorOf(options.operation, agreed.failures) }, cleanup };
    }
    return { round: { type: 'too-late', by: now - validUntil }, cleanup };
  }
  return {
    round: {
      type: 'granted',
      grant: { fencingToken: agreed.token, validUntil },
      grantedBy: granted.map(({ instance }) => instance),
    },
    cleanup: Promise.resolve(),
  };
}

async function acquireOn(instance: RedlockInstance, call: ScriptCall, sent?: SentCalls): Promise<AcquireReply> {
  const running = runCall(instance.client, call);
  sent?.add(instance, running);
  const reply = await running;
  const parsed = parseAcquireReply(reply);
  if (!parsed) throw new Error(`unexpected reply from the acquire script: ${JSON.stringify(reply)}`);
  return parsed;
}
