import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Logger } from '@nestjs/common';
import { Leadership, OnLeader } from '../../lib';

export const SAMPLE_ELECTION = 'sample-compactor';
const EVERY_MS = 2_000;

/** What this instance's leader-only job has done, for `GET /leader`. */
export interface LeaderJobStatus {
  readonly runs: number;
  readonly lastRunAt: number | null;
  readonly lastTerm: string | null;
}

/**
 * A job only the elected leader runs: every 2 s while this instance leads, it "compacts" (here: counts a run).
 * With several instances, exactly one of them runs it; when the leader stops, another takes over with a higher term.
 */
@Injectable()
export class LeaderJob {
  private readonly logger = new Logger(LeaderJob.name);
  private status: LeaderJobStatus = { runs: 0, lastRunAt: null, lastTerm: null };

  get current(): LeaderJobStatus {
    return this.status;
  }

  @OnLeader(SAMPLE_ELECTION)
  async lead(leadership: Leadership, stop: AbortSignal): Promise<void> {
    this.logger.log(`Leading ${SAMPLE_ELECTION} with term ${leadership.term}`);
    while (!stop.aborted) {
      // A real job would pass leadership.term to the store it writes, as a fencing token.
      this.status = { runs: this.status.runs + 1, lastRunAt: Date.now(), lastTerm: leadership.term.toString() };
      // Node's timer takes the signal and removes its listener when it fires (a listener per run would pile up).
      await sleep(EVERY_MS, undefined, { signal: stop }).catch(() => undefined);
    }
  }
}
