import { Module } from '@nestjs/common';
import { LeaderController } from './leader.controller';
import { LeaderJob } from './leader.job';

/** `GET /leader`: a job that only the elected leader runs, and who leads. */
@Module({ controllers: [LeaderController], providers: [LeaderJob] })
export class LeaderModule {}
