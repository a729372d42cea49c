import { Inject, Injectable, type OnModuleInit, Optional } from '@nestjs/common';
import { DISTRIBUTED_LOCK_MODULE_OPTIONS } from '../distributed-lock.module-definition';
import { LockService } from '../lock.service';
import { attachLockLogger } from './lock-logger';
import { attachLockTelemetry } from './lock-telemetry';
import type { LockObservabilityOptions } from './lock-observability.options';

/**
 * Turns the module's `telemetry` and `logging` options into subscriptions on LockService.events$.
 * Attached in onModuleInit, before any module that imports the lock module runs its own init hooks;
 * detached when the service closes on shutdown (events$ completes).
 */
@Injectable()
export class LockObservability implements OnModuleInit {
  private readonly detachers: (() => void)[] = [];

  constructor(
    private readonly locks: LockService,
    @Optional() @Inject(DISTRIBUTED_LOCK_MODULE_OPTIONS) private readonly options: LockObservabilityOptions = {},
  ) {}

  onModuleInit(): void {
    // A test that replaced LockService with its own double (overrideProvider(LockService).useValue(...)) has no
    // lock events to log or record.
    if (!(this.locks instanceof LockService)) return;
    const { telemetry = false, logging = true } = this.options ?? {};
    if (logging) this.detachers.push(attachLockLogger(this.locks, logging === true ? undefined : logging));
    if (telemetry) this.detachers.push(attachLockTelemetry(this.locks, telemetry === true ? {} : telemetry));
  }

  /** Stops logging and recording (e.g. before swapping providers in tests). */
  detach(): void {
    this.detachers.splice(0).forEach((detach) => detach());
  }
}
