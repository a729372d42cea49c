import { CallHandler, ExecutionContext, HttpException, Injectable, NestInterceptor, Optional } from '@nestjs/common';
import { HttpAdapterHost, Reflector } from '@nestjs/core';
import { catchError, isObservable, Observable, throwError } from 'rxjs';
import { currentLockScope, runInLockScope } from '../context/lock-context';
import type { WithLockMetadata } from '../decorators/with-lock-metadata';
import { WITH_LOCK_METADATA } from '../distributed-lock.constants';
import { LockTimeoutError } from '../errors';
import { contextLookup } from '../key-template/context-lookup';
import { PlaceholderLookup, renderKeyTemplate } from '../key-template/render-key-template';
import { LockService } from '../lock.service';
import { httpRequest, httpResponse } from '../utils/context-args';
import { describeLockError, LockErrorResponse } from './lock-error-response';
import { LockSet } from './lock-set';
import { enterHandlerScope, heldUntilDone, isThenable, lockedObservable, runWhileHeld } from './locked-call';

/**
 * Applied by `@WithLock`. Acquires the handler's key(s) before it runs and releases them when its
 * Observable completes, errors or is unsubscribed, so streamed responses (SSE) hold the lock to the end.
 *
 * Lock failures become: busy past waitTimeout -> 409 with `Retry-After`; lock lost while the handler ran,
 * or backend unreachable -> 503; bad key or unresolved placeholder -> 400. RPC and WebSocket handlers get
 * an RpcException / WsException with the same body. Extend this class and override `resolveKeys`,
 * `mapError` or `retryAfterSeconds` to change that.
 */
@Injectable()
export class LockInterceptor implements NestInterceptor {
  constructor(
    protected readonly locks: LockService,
    protected readonly reflector: Reflector,
    @Optional() protected readonly adapterHost?: HttpAdapterHost,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const metadata = this.reflector.getAllAndOverride<WithLockMetadata | undefined>(WITH_LOCK_METADATA, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (!metadata) return next.handle();
    return lockedObservable(
      this.locks,
      () => this.resolveKeys(context, metadata),
      metadata.options,
      () => next.handle(),
      () => this.requestIdOf(context),
    ).pipe(catchError((error: unknown) => throwError(() => this.mapError(error, context))));
  }

  /**
   * Runs one call of a `@WithLock` handler: `handler` runs once the keys are held, in their lock scope.
   * Resolves with its result; an Observable result comes back wrapped so that it holds the lock until it ends.
   * Rejects with what `mapError` makes of a lock failure or of the handler's own error.
   */
  runHandler(context: ExecutionContext, metadata: WithLockMetadata, handler: (locks: LockSet) => unknown): unknown {
    return runInLockScope(
      () => this.lockAndRunNow(context, metadata, handler),
      () => this.requestIdOf(context),
    );
  }

  /**
   * Where the backend is in-process (memory) and the keys are free, the whole call runs without a promise of
   * its own: a synchronous handler's result comes back as it is. Otherwise, lockAndRun.
   */
  private lockAndRunNow(context: ExecutionContext, metadata: WithLockMetadata, handler: (locks: LockSet) => unknown): unknown {
    let keys: readonly string[];
    let locks: LockSet | undefined;
    try {
      keys = this.resolveKeys(context, metadata);
      locks = LockSet.acquireNow(this.locks, keys, metadata.options);
    } catch (error) {
      return Promise.reject(this.mapError(error, context));
    }
    return locks ? this.runHeld(locks, context, handler) : this.lockAndRun(context, metadata, handler, keys);
  }

  private async lockAndRun(
    context: ExecutionContext,
    metadata: WithLockMetadata,
    handler: (locks: LockSet) => unknown,
    keys: readonly string[],
  ): Promise<unknown> {
    let locks: LockSet;
    try {
      locks = await LockSet.acquire(this.locks, keys, metadata.options, this.cancelWhenClientLeaves(context));
    } catch (error) {
      throw this.mapError(error, context);
    }
    return this.runHeld(locks, context, handler);
  }

  /** Runs the handler with `locks` held; releases when it returns, settles, or its Observable ends. */
  private runHeld(locks: LockSet, context: ExecutionContext, handler: (locks: LockSet) => unknown): unknown {
    enterHandlerScope(locks);
    let result: unknown;
    try {
      result = runWhileHeld(locks, () => handler(locks));
    } catch (error) {
      return this.afterFailure(locks, error, context);
    }
    return isThenable(result) ? this.settle(locks, result, context) : this.completed(locks, result, context);
  }

  /** Waits for the handler's promise (which runWhileHeld races against a loss), then releases. */
  private async settle(locks: LockSet, pending: PromiseLike<unknown>, context: ExecutionContext): Promise<unknown> {
    let result: unknown;
    try {
      result = await pending;
    } catch (error) {
      return this.afterFailure(locks, error, context);
    }
    return this.completed(locks, result, context);
  }

  /** The handler's result is in: hold through an Observable, else release (at once where the backend can). */
  private completed(locks: LockSet, result: unknown, context: ExecutionContext): unknown {
    if (isObservable(result)) return this.holdWhileStreaming(result, locks, context);
    if (locks.releaseNow()) return result;
    return locks.release().then(() => result);
  }

  private async afterFailure(locks: LockSet, error: unknown, context: ExecutionContext): Promise<never> {
    await locks.release();
    throw this.mapError(error, context);
  }

  private holdWhileStreaming(result: Observable<unknown>, locks: LockSet, context: ExecutionContext): Observable<unknown> {
    const held = heldUntilDone(result, locks, currentLockScope()!, (error) => this.mapError(error, context));
    if (context.getType() !== 'http') return held;
    // Nest drops an SSE result unsubscribed when the response has ended meanwhile: release with the response then.
    let subscribed = false;
    rawResponse(context)?.once?.('close', () => subscribed || void locks.release());
    return new Observable((subscriber) => {
      subscribed = true;
      return held.subscribe(subscriber);
    });
  }

  /** Cancels a queued HTTP request's wait when its client disconnects. Only built when the request has to wait. */
  private cancelWhenClientLeaves(context: ExecutionContext): (() => AbortSignal) | undefined {
    if (context.getType() !== 'http') return undefined;
    return () => {
      const controller = new AbortController();
      const response = rawResponse(context);
      response?.once?.('close', () => {
        if (!response.writableFinished) controller.abort(new Error('the client disconnected while waiting for the lock'));
      });
      return controller.signal;
    };
  }

  /**
   * The id carried into lock events and logs: the `x-request-id` header, or `request.id` (Fastify sets one).
   * Override to read your own correlation id.
   */
  protected requestIdOf(context: ExecutionContext): string | undefined {
    if (context.getType() !== 'http') return undefined;
    const request = httpRequest(context);
    const header = request?.headers?.['x-request-id'];
    const id = (Array.isArray(header) ? header[0] : header) ?? request?.id;
    // Bounded, so a client cannot flood logs through it.
    return typeof id === 'string' || typeof id === 'number' ? String(id).slice(0, 128) : undefined;
  }

  /** The keys to lock for this call. Throw here to reject it (the error goes through `mapError`). */
  protected resolveKeys(context: ExecutionContext, metadata: WithLockMetadata): readonly string[] {
    if (metadata.factory) {
      const keys = metadata.factory(context);
      return typeof keys === 'string' ? [keys] : keys;
    }
    // Built on first use, so a template without placeholders also works in other context types (graphql...).
    let lookup: PlaceholderLookup | undefined;
    const lazyLookup: PlaceholderLookup = (placeholder) => (lookup ??= contextLookup(context))(placeholder);
    return metadata.templates.map((template) => renderKeyTemplate(template, lazyLookup));
  }

  /**
   * Turns a lock failure into what the transport answers (see describeLockError): an HttpException, or an
   * RpcException / WsException carrying the same body. Other errors pass through unchanged.
   */
  protected mapError(error: unknown, context: ExecutionContext): unknown {
    const response = describeLockError(error);
    if (!response) return error;
    switch (context.getType<string>()) {
      case 'http':
        if (error instanceof LockTimeoutError) this.setHeader(context, 'Retry-After', String(this.retryAfterSeconds(error)));
        return new HttpException(response, response.statusCode, { cause: error });
      case 'rpc':
        return transportException('@nestjs/microservices', 'RpcException', response) ?? error;
      case 'ws':
        return transportException('@nestjs/websockets', 'WsException', response) ?? error;
      default:
        return error;
    }
  }

  /** `Retry-After` for a 409, in seconds. The holder's remaining time is unknown, so a short default. */
  protected retryAfterSeconds(_error: LockTimeoutError): number {
    return 1;
  }

  private setHeader(context: ExecutionContext, name: string, value: string): void {
    const response = httpResponse(context);
    const adapter = this.adapterHost?.httpAdapter;
    if (adapter) adapter.setHeader(response, name, value);
    else response?.setHeader?.(name, value);
  }
}

/** The Node response under Express's (the same object) or Fastify's (`reply.raw`). */
function rawResponse(context: ExecutionContext): { once?: (event: string, listener: () => void) => unknown; writableFinished?: boolean } | undefined {
  const response = httpResponse(context);
  return response?.raw ?? response;
}

/**
 * Those packages are installed whenever an rpc or ws handler runs, but this library must not require them
 * otherwise. Their filters send the object to the client as the error.
 */
function transportException(packageName: string, className: string, response: LockErrorResponse): Error | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const exception = require(packageName)[className] as new (error: object) => Error;
    return new exception({ status: 'error', ...response });
  } catch {
    return undefined;
  }
}
