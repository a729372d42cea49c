import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import type { Subscription } from 'rxjs';
import type { LockMode } from '../lock-options';
import { LockService } from '../lock.service';
import { jsonSafe } from '../utils/json';

/** One lock this process holds, as the admin endpoint lists it. */
export interface HeldLockSummary {
  readonly key: string;
  readonly family: string;
  readonly mode: LockMode;
  readonly fencingToken: bigint;
  /** Epoch ms of the grant. */
  readonly since: number;
  /** Epoch ms of the current validity (moves with each renewal). */
  readonly expiresAt: number;
  readonly requestId?: string;
}

/**
 * The locks this process holds, kept from LockService.events$ (LockService exposes only how many it holds).
 * Sees locks granted after it was created, which is from module initialisation on.
 */
@Injectable()
export class HeldLocksTracker implements OnModuleDestroy {
  private readonly held = new Map<string, HeldLockSummary>();
  private readonly subscription: Subscription;

  constructor(locks: LockService) {
    this.subscription = locks.events$.subscribe((event) => {
      // Several holders of one key in this process (readers, semaphore permits) differ by fencing token.
      const id = `${event.key}\u0000${'fencingToken' in event ? event.fencingToken : ''}`;
      switch (event.type) {
        case 'acquired': {
          const { key, family, mode, fencingToken, at, expiresAt, requestId } = event;
          this.held.set(
            id,
            jsonSafe({
              key,
              family,
              mode,
              fencingToken,
              since: at,
              expiresAt,
              ...(requestId !== undefined && { requestId }),
            }),
          );
          break;
        }
        case 'renewed': {
          const entry = this.held.get(id);
          if (entry) this.held.set(id, jsonSafe({ ...entry, expiresAt: event.expiresAt }));
          break;
        }
        case 'released':
        case 'lost':
          this.held.delete(id);
          break;
      }
    });
  }

  /** Oldest grant first. */
  list(): HeldLockSummary[] {
    return [...this.held.values()].sort((a, b) => a.since - b.since);
  }

  onModuleDestroy(): void {
    this.subscription.unsubscribe();
  }
}
