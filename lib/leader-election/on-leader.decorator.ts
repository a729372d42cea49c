import { SetMetadata } from '@nestjs/common';
import { ON_LEADER_METADATA } from '../distributed-lock.constants';
import { checkOptionNames, checkTtl, optionNames, validateLockKey } from '../utils/validate';
import type { CampaignOptions } from './leader-election.options';

const ON_LEADER_OPTIONS = optionNames<Pick<CampaignOptions, 'value' | 'ttl'>>({ value: true, ttl: true });

export interface OnLeaderMetadata {
  readonly name: string;
  readonly options: Readonly<Pick<CampaignOptions, 'value' | 'ttl'>>;
}

/**
 * Runs a singleton provider's method whenever this instance becomes leader of the election `name`, with the
 * `Leadership` and a `stop` signal that aborts when the leadership is lost or the application shuts down. The
 * module campaigns in the background once the application has bootstrapped (start-up never waits for it).
 * The leadership is held until the promise the method returns settles, then resigned; a method that returns no
 * promise keeps it until it is lost or the application shuts down. Afterwards the instance campaigns again (after
 * a 1 s pause), so it takes part in the next election; a new campaign starts only once the method's promise
 * settled, so two runs never overlap in one instance. Errors are logged, never swallowed silently.
 *
 * ```ts
 * @OnLeader('billing-scheduler')
 * async schedule(leadership: Leadership, stop: AbortSignal) {
 *   while (!stop.aborted) await this.runDueJobs(leadership.term, stop);
 * }
 * ```
 */
export function OnLeader(name: string, options: Pick<CampaignOptions, 'value' | 'ttl'> = {}): MethodDecorator {
  checkOptionNames(options, ON_LEADER_OPTIONS, `@OnLeader('${name}') options`, '{ ttl: 15000 }');
  const metadata: OnLeaderMetadata = { name: validateLockKey(name), options: Object.freeze({ ...options }) };
  if (options.ttl !== undefined) checkTtl(options.ttl);
  return SetMetadata(ON_LEADER_METADATA, metadata);
}
