import {
  BadRequestException,
  Controller,
  Get,
  NotImplementedException,
  Optional,
  Param,
  ServiceUnavailableException,
} from '@nestjs/common';
import { InvalidLockKeyError, LockBackendError, LockNotSupportedError } from '../errors';
import { LockService, type LockInspection } from '../lock.service';
import { HeldLocksTracker, type HeldLockSummary } from './held-locks.tracker';
import { toJson, type Jsonified } from '../utils/json';

/** `GET <path>`: this instance and the locks it holds. */
export interface HeldLocksReport {
  readonly holder: string;
  readonly namespace: string;
  readonly backend: string;
  readonly address: string;
  readonly heldCount: number;
  /** Absent when the controller runs without HeldLocksTracker (mounted directly, not through the admin module). */
  readonly held?: readonly HeldLockSummary[];
}

/**
 * Read-only lock inspector for operators. It shows keys, holder ids and fencing tokens, never owner tokens,
 * but it still tells an outsider what your system is doing: mount it behind a guard.
 *
 * Mount it with `DistributedLockAdminModule.register({ guards: [AdminGuard] })`, or subclass it:
 * `@Controller('ops/locks') @UseGuards(AdminGuard) class LocksAdmin extends LockAdminController {}`.
 */
@Controller('locks')
export class LockAdminController {
  constructor(
    protected readonly locks: LockService,
    @Optional() protected readonly tracker?: HeldLocksTracker,
  ) {}

  @Get()
  held(): Jsonified<HeldLocksReport> {
    return toJson({
      holder: this.locks.holderId,
      namespace: this.locks.keyPrefix,
      backend: this.locks.backend.kind,
      address: this.locks.backend.address,
      heldCount: this.locks.heldCount,
      ...(this.tracker && { held: this.tracker.list() }),
    });
  }

  /** Who holds the key, since when, its fencing token and expiry, and the waiters in order. URL-encode the key. */
  @Get(':key')
  async inspect(@Param('key') key: string): Promise<Jsonified<LockInspection>> {
    try {
      return toJson(await this.locks.inspect(key));
    } catch (error) {
      throw toHttpError(error);
    }
  }
}

function toHttpError(error: unknown): unknown {
  if (error instanceof InvalidLockKeyError) return new BadRequestException(error.message);
  if (error instanceof LockNotSupportedError) return new NotImplementedException(error.message);
  if (error instanceof LockBackendError) return new ServiceUnavailableException(error.message);
  return error;
}
