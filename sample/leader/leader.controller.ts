import { Controller, Get } from '@nestjs/common';
import { LeaderElection } from '../../lib';
import { LeaderJob, SAMPLE_ELECTION } from './leader.job';

@Controller('leader')
export class LeaderController {
  constructor(
    private readonly elections: LeaderElection,
    private readonly job: LeaderJob,
  ) {}

  /** Who leads the sample's election (any instance can answer), and what this instance's leader-only job did. */
  @Get()
  async current() {
    const leader = await this.elections.leader(SAMPLE_ELECTION);
    return {
      election: SAMPLE_ELECTION,
      leader: leader && { value: leader.value, term: leader.term.toString() },
      thisInstance: { isLeader: this.elections.isLeader(SAMPLE_ELECTION), job: this.job.current },
    };
  }
}
