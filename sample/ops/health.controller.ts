import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { LockHealthIndicator } from '../../lib';

/** `GET /health`: up with the backend's round-trip latency, 503 when the lock backend cannot be reached. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly lock: LockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.lock.isHealthy('lock')]);
  }
}
