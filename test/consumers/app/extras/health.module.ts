import { Controller, Get, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { LockHealthIndicator } from 'nest-distributed-lock';
import { AppModule } from '../src/app.module.js';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly lock: LockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.lock.isHealthy('lock', { timeout: 1_000 })]);
  }
}

@Module({ imports: [AppModule, TerminusModule], controllers: [HealthController] })
export class HealthAppModule {}
