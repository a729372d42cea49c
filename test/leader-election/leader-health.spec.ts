import { Controller, Get, INestApplication, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { DistributedLockModule } from '../../lib/distributed-lock.module';
import { LeaderHealthIndicator } from '../../lib/health/leader-health.indicator';
import { LeaderElection } from '../../lib/leader-election/leader-election.service';

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly leader: LeaderHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.leader.isLeader('leader', 'scheduler')]);
  }

  @Get('ready')
  @HealthCheck()
  ready() {
    return this.health.check([() => this.leader.isLeader('leader', 'scheduler', { requireLeader: true })]);
  }
}

@Module({ imports: [TerminusModule.forRoot({ logger: false })], controllers: [HealthController] })
class HealthModule {}

describe('LeaderHealthIndicator', () => {
  let app: INestApplication;
  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend: new MemoryLockBackend(), isGlobal: true }), HealthModule],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });
  afterEach(() => app.close());

  it('reports follower (up; down with requireLeader), then leader with its term, then follower again after resign', async () => {
    let response = await request(app.getHttpServer()).get('/health').expect(200);
    expect(response.body.info.leader).toEqual({ status: 'up', election: 'scheduler', role: 'follower' });
    response = await request(app.getHttpServer()).get('/health/ready').expect(503);
    expect(response.body.error.leader).toEqual({ status: 'down', election: 'scheduler', role: 'follower' });

    const leadership = await app.get(LeaderElection).campaign('scheduler');
    response = await request(app.getHttpServer()).get('/health/ready').expect(200);
    expect(response.body.info.leader).toEqual({
      status: 'up',
      election: 'scheduler',
      role: 'leader',
      term: leadership.term.toString(),
      since: leadership.since,
    });

    await leadership.resign();
    response = await request(app.getHttpServer()).get('/health').expect(200);
    expect(response.body.info.leader.role).toBe('follower');
  });
});
