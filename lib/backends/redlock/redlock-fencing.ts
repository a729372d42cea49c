import type { AcquireRequest } from '../lock-backend.interface';
import { raiseFenceCall, runCall } from '../redis/lock-calls';
import { askAll } from './ask-all';
import type { InstanceFailure } from '../../errors/lock-quorum.error';
import type { RedlockInstance } from './redlock-instance';

/**
 * Fencing tokens over N independent instances.
 *
 * Each instance's acquire script hands out its own max(counter + 1, server TIME in µs) and stores it in its
 * counter. The grant's token is the largest value among the majority that granted. Before the grant is
 * returned, the counters of that majority that hold less are raised to it (RAISE_FENCE_SCRIPT); the grant is
 * only returned once a majority holds a counter >= the token.
 *
 * Why it increases: a later acquisition needs a majority too, which shares at least one instance with ours.
 * That instance's counter was raised to our token before we returned, so it answers more than our token, and
 * the later token, a maximum that includes that answer, is larger.
 *
 * Guaranteed: every acquisition that starts after an earlier one returned gets a larger token (so every
 * exclusive or write holder a larger one than all before it), as long as the instances keep their counters
 * (a raised counter expires only once that instance's clock has passed it: see RAISE_FENCE_SCRIPT);
 * after an instance restarted empty, as long as its clock is past the tokens issued before, i.e. the instances'
 * clocks differ by less than the time it was down (Redlock's "delayed restart" rule, which keeps a restarted
 * instance out for at least the longest ttl, gives that for NTP-synced servers).
 * Not guaranteed: an order between readers that acquire at the same moment (their tokens are merely distinct in
 * practice); anything after a majority of instances lost their data while their clocks lag. And fencing does not
 * make Redlock's mutual exclusion hold beyond its timing assumptions: it is what lets the protected resource
 * reject a paused or expired holder whose token is older than one it has already seen.
 */
export async function agreeOnFence(
  request: Pick<AcquireRequest, 'namespace' | 'key' | 'ttl'>,
  granted: readonly { instance: RedlockInstance; token: bigint }[],
  quorum: number,
  timeout: number,
  fenceRetention: number,
): Promise<{ token: bigint } | { failures: InstanceFailure[] }> {
  const token = granted.reduce((max, grant) => (grant.token > max ? grant.token : max), 0n);
  const behind = granted.filter((grant) => grant.token < token).map((grant) => grant.instance);
  // The acquire script already set each granting instance's counter to the value it handed out.
  const agreeing = granted.length - behind.length;
  if (agreeing >= quorum) return { token };
  const call = raiseFenceCall(request, token, fenceRetention);
  const answers = await askAll(behind, (instance) => runCall(instance.client, call), {
    timeout,
    settled: (so) => agreeing + so.filter((answer) => answer.ok).length >= quorum,
  });
  if (agreeing + answers.filter((answer) => answer.ok).length >= quorum) return { token };
  return {
    failures: answers.flatMap((answer) =>
      answer.ok ? [] : [{ address: answer.instance.address, error: answer.error }],
    ),
  };
}
