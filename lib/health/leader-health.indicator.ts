import { Injectable, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { LeaderElection } from '../leader-election/leader-election.service';
import type { HealthResult } from './health-result';
import { loadTerminus, TerminusResults } from './terminus';

export interface LeaderHealthCheckOptions {
  /**
   * Report down while this instance does not lead, e.g. for a readiness probe that routes traffic to the leader
   * only. Default false: a follower is healthy, and the role is in the details.
   */
  requireLeader?: boolean;
}

/** What the indicator reports besides `status`. */
export type LeaderHealthDetails = {
  election: string;
  role: 'leader' | 'follower';
  /** The term (decimal) while this instance leads. */
  term?: string;
  /** Epoch ms since when this instance leads. */
  since?: number;
};

export type LeaderHealthResult<Key extends string = 'leader'> = HealthResult<Key, LeaderHealthDetails>;

/**
 * A `@nestjs/terminus` indicator for one election: whether this instance is its leader or a follower, answered
 * locally (no server call). Up either way unless `requireLeader` is set.
 *
 * ```ts
 * check() { return this.health.check([() => this.leader.isLeader('leader', 'scheduler')]); }
 * ```
 */
@Injectable()
export class LeaderHealthIndicator {
  private readonly results: TerminusResults;

  constructor(
    private readonly elections: LeaderElection,
    @Optional() moduleRef?: ModuleRef,
  ) {
    this.results = new TerminusResults(moduleRef, 'LeaderHealthIndicator');
  }

  async isLeader<const Key extends string = 'leader'>(
    key: Key,
    election: string,
    options: LeaderHealthCheckOptions = {},
  ): Promise<LeaderHealthResult<Key>> {
    loadTerminus('LeaderHealthIndicator');
    const leadership = this.elections.leaderships().find((held) => held.name === election && held.isLeader);
    const details: LeaderHealthDetails = leadership
      ? { election, role: 'leader', term: leadership.term.toString(), since: leadership.since }
      : { election, role: 'follower' };
    if (!leadership && options.requireLeader) return this.results.down(key, details);
    return this.results.up(key, details);
  }
}
