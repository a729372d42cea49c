import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DistributedLockAdminModule } from '../../lib';
import { AdminTokenGuard } from './admin-token.guard';
import { HealthController } from './health.controller';

/** Operations endpoints: `GET /health`, and the lock inspector at `GET /admin/locks/:key` behind AdminTokenGuard. */
@Module({
  imports: [
    TerminusModule.forRoot(),
    DistributedLockAdminModule.register({ path: 'admin/locks', guards: [AdminTokenGuard] }),
  ],
  controllers: [HealthController],
})
export class OpsModule {}
