/**
 * One instance of an app with a `@ScheduledLock` 1-second cron job, in its own OS process (forked by
 * scheduled-apps.ts with ts-register.js). Reports over IPC: 'ready'; 'ran' when a firing runs here (its key and
 * fencing token, sent before the job's work); 'skipped' when it fired but another instance had the firing
 * (read from the library's debug log line). 'stop' closes the app gracefully, then the process exits.
 */
import 'reflect-metadata';
import { ConsoleLogger, Injectable, Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { DistributedLockModule } from '../../../lib/distributed-lock.module';
import { LockService } from '../../../lib/lock.service';
import { ScheduledLock } from '../../../lib/schedule/scheduled-lock.decorator';
import { connectBackend } from '../../support/backends';
import { sleep } from '../../support/time';
import { SCHEDULED_APP_ENV, ScheduledAppConfig, ScheduledAppMessage } from './scheduled-app-protocol';

const config = JSON.parse(process.env[SCHEDULED_APP_ENV]!) as ScheduledAppConfig;

function send(message: ScheduledAppMessage): void {
  process.send?.(message);
}

/** Forwards the library's "skipped here" debug lines, so the parent can tell a skipped firing from one nobody fired. */
class ReportingLogger extends ConsoleLogger {
  override debug(message: unknown, ...rest: unknown[]): void {
    const skipped = /firing "([^"]+)" runs on another instance/.exec(String(message));
    if (skipped) send({ type: 'skipped', pid: process.pid, key: skipped[1] });
    else super.debug(message, ...rest);
  }
}

@Injectable()
class Ticker {
  constructor(private readonly locks: LockService) {}

  @Cron('* * * * * *', { name: 'tick' })
  @ScheduledLock('tick', { lockAtLeastFor: config.lockAtLeastFor, lockAtMostFor: 20_000 })
  async tick(): Promise<void> {
    const lock = this.locks.current()!;
    send({ type: 'ran', pid: process.pid, key: lock.key, fencingToken: lock.fencingToken.toString() });
    await sleep(config.workMs);
  }
}

async function main(): Promise<void> {
  const { backend, close } = connectBackend(config.kind, config.address);
  @Module({
    imports: [ScheduleModule.forRoot(), DistributedLockModule.forRoot({ backend, keyPrefix: config.keyPrefix })],
    providers: [Ticker],
  })
  class AppModule {}
  const app = await NestFactory.createApplicationContext(AppModule, {
    logger: new ReportingLogger('scheduled-app', { logLevels: ['error', 'warn', 'debug'] }),
  });
  Logger.overrideLogger(new ReportingLogger('scheduled-app', { logLevels: ['error', 'warn', 'debug'] }));
  process.on('message', (message: { type?: string }) => {
    if (message?.type !== 'stop') return;
    void app
      .close()
      .then(() => close())
      .then(() => process.exit(0));
  });
  send({ type: 'ready', pid: process.pid });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
