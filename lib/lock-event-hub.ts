import { Observable, Subject } from 'rxjs';
import type { AcquireRequest } from './backends/lock-backend.interface';
import type { LockScope } from './context/lock-context';
import type { LockEvent, LockEventBase } from './lock-event';
import type { LockLifecycleListener } from './lock-handle';
import { jsonSafe } from './utils/json';

/** What a handle's later events are built from: its request, the family, and the lock scope (request id). */
export interface EventOrigin {
  readonly request: AcquireRequest;
  readonly family: string;
  readonly scope: LockScope | undefined;
}

interface TypedEventListener {
  readonly types: ReadonlySet<LockEvent['type']>;
  readonly listener: (event: LockEvent) => void;
}

/**
 * LockService's `events$`: builds events only for listeners that want them, so the hot path of an uncontended
 * lock that nobody observes builds none.
 */
export class LockEventHub {
  readonly events$: Observable<LockEvent>;
  private readonly subject = new Subject<LockEvent>();
  /** Listeners that said which event types they use (the module's logger); the others are not built for them. */
  private readonly typedListeners = new Set<TypedEventListener>();

  /** Called when the hub goes from nobody listening to a listener (LockGrants then follows the held handles). */
  onFirstListener: (() => void) | undefined;

  constructor(
    private readonly backendKind: string,
    private readonly holderId: string,
  ) {
    this.events$ = new Observable<LockEvent>((subscriber) => {
      const first = !this.tracksHandles();
      const subscription = this.subject.subscribe(subscriber);
      if (first) this.onFirstListener?.();
      return subscription;
    });
  }

  /**
   * One listener for every handle, so a grant costs no rxjs subscription. Handles get it only while someone
   * observes events (see `tracksHandles`), with their EventOrigin as context: events are built from it only
   * when one is emitted, and with only the logger's warnings listening, most grants never emit one.
   */
  readonly lifecycle: LockLifecycleListener = {
    renewal: (handle, renewal, context) => {
      const base = this.base(context as EventOrigin);
      const { fencingToken } = handle;
      if (renewal.type === 'renewed') {
        this.emit({
          ...base,
          type: 'renewed',
          at: Date.now(),
          fencingToken,
          expiresAt: renewal.expiresAt,
          renewalCount: renewal.renewalCount,
        });
      } else {
        this.emit({
          ...base,
          type: 'at-risk',
          at: Date.now(),
          fencingToken,
          remaining: renewal.remaining,
          error: renewal.error,
        });
      }
    },
    lost: (handle, error, context) => {
      const base = this.base(context as EventOrigin);
      const holdTime = Date.now() - handle.acquiredAt;
      this.emit({
        ...base,
        type: 'lost',
        at: Date.now(),
        fencingToken: handle.fencingToken,
        reason: error.reason ?? String(error),
        holdTime,
      });
    },
    released: (handle, context) => {
      if (this.wants('released')) {
        const holdTime = Date.now() - handle.acquiredAt;
        this.emit({
          ...this.base(context as EventOrigin),
          type: 'released',
          at: Date.now(),
          fencingToken: handle.fencingToken,
          holdTime,
        });
      }
    },
  };

  /** See LockService.listenToEvents. */
  listen(types: Iterable<LockEvent['type']>, listener: (event: LockEvent) => void): () => void {
    const entry: TypedEventListener = { types: new Set(types), listener };
    const first = !this.tracksHandles();
    this.typedListeners.add(entry);
    if (first) this.onFirstListener?.();
    return () => this.typedListeners.delete(entry);
  }

  /** Whether anyone listens at all: else a new handle gets no lifecycle listener. */
  tracksHandles(): boolean {
    return this.subject.observed || this.typedListeners.size > 0;
  }

  wants(type: LockEvent['type']): boolean {
    if (this.subject.observed) return true;
    for (const entry of this.typedListeners) if (entry.types.has(type)) return true;
    return false;
  }

  emit(event: LockEvent): void {
    jsonSafe(event);
    this.subject.next(event);
    for (const entry of this.typedListeners) if (entry.types.has(event.type)) entry.listener(event);
  }

  /** The fields every event of this origin carries. */
  base({ request, family, scope }: EventOrigin): LockEventBase {
    const requestId = scope?.requestId;
    return {
      key: request.key,
      namespace: request.namespace,
      family,
      backend: this.backendKind,
      holder: this.holderId,
      mode: request.mode ?? 'exclusive',
      at: Date.now(),
      ...(requestId !== undefined && { requestId }),
    };
  }

  complete(): void {
    this.subject.complete();
    this.typedListeners.clear();
  }
}
