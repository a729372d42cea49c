import {
  CallHandler,
  ExecutionContext,
  HttpException,
  Injectable,
  Logger,
  NestInterceptor,
  Optional,
} from '@nestjs/common';
import { HttpAdapterHost, Reflector } from '@nestjs/core';
import type { Observable } from 'rxjs';
import type { WithLockMetadata } from '../decorators/with-lock-metadata';
import { currentLockScope } from '../context/lock-context';
import { LOGGER_CONTEXT, WITH_LOCK_METADATA } from '../distributed-lock.constants';
import { LockModuleMissingError, LockTimeoutError } from '../errors';
import { contextLookup } from '../key-template/context-lookup';
import { PlaceholderLookup, renderKeyTemplate } from '../key-template/render-key-template';
import { LockService } from '../lock.service';
import { httpRequest, httpResponse, type NodeResponseLike } from '../utils/context-args';
import { describeLockError, LockErrorResponse } from './lock-error-response';
import { lockedObservable } from './locked-call';
import { loadOptionalPackage } from '../utils/optional-package';

/** The interceptor forRoot({ lockInterceptor }) configured, per LockService (see designateLockInterceptor). */
const designatedInterceptors = new WeakMap<LockService, LockInterceptor>();

/** @internal Makes `interceptor` answer for every LockInterceptor bound by @WithLock that uses `locks`. */
export function designateLockInterceptor(locks: LockService, interceptor: LockInterceptor): LockInterceptor {
  designatedInterceptors.set(locks, interceptor);
  return interceptor;
}

/**
 * Bound by `@WithLock` (method or class level). Acquires the handler's key(s) before it runs and releases them when its
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
    // Optional so that a module that cannot see DistributedLockModule fails with LockModuleMissingError, not
    // with Nest's "can't resolve dependencies of the LockInterceptor".
    @Optional() protected readonly locks: LockService,
    protected readonly reflector: Reflector,
    @Optional() protected readonly adapterHost?: HttpAdapterHost,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    // Nest makes one instance per module that uses @WithLock; the one forRoot({ lockInterceptor }) configured answers.
    const designated = this.locks && designatedInterceptors.get(this.locks);
    if (designated && designated !== this) return designated.intercept(context, next);
    const metadata = this.reflector.getAllAndOverride<WithLockMetadata | undefined>(WITH_LOCK_METADATA, [
      context.getHandler(),
      context.getClass(),
    ]);
    // A class-level and a method-level @WithLock both bind this interceptor: the first one to run locks the call,
    // and the second runs inside its lock scope (one ExecutionContext per call, shared by its interceptors).
    if (!metadata || currentLockScope()?.locks(context)) return next.handle();
    if (!this.locks) throw new LockModuleMissingError(`${context.getClass().name}.${context.getHandler().name}`);
    return lockedObservable(
      this.locks,
      () => this.resolveKeys(context, metadata),
      metadata.options,
      () => next.handle(),
      {
        requestId: () => this.requestIdOf(context),
        cancelWhen: this.clientLeaves(context),
        mapError: (error) => this.mapError(error, context),
        call: context,
      },
    );
  }

  /** @internal False when Nest made this instance in a module that cannot see DistributedLockModule. */
  get hasLockService(): boolean {
    return this.locks !== undefined;
  }

  /** Cancels a queued HTTP request's wait when its client disconnects; set up only when the request has to wait. */
  private clientLeaves(context: ExecutionContext): ((cancel: (reason: Error) => void) => void) | undefined {
    if (context.getType() !== 'http') return undefined;
    return (cancel) => {
      const response = rawResponse(context);
      const left = () => cancel(new ClientLeftError());
      // It may have left already, before the wait began (during a slow guard): its 'close' has fired then.
      if (response?.destroyed && !response.writableFinished) return left();
      response?.once?.('close', () => {
        if (!response.writableFinished) left();
      });
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
    const { templates } = metadata;
    // One key, the usual case: no mapping closure.
    if (templates.length === 1) return [renderKeyTemplate(templates[0], lazyLookup)];
    return templates.map((template) => renderKeyTemplate(template, lazyLookup));
  }

  /**
   * Turns a lock failure into what the transport answers (see describeLockError): an HttpException (HTTP and
   * GraphQL), or an RpcException / WsException carrying the same body. Other errors pass through unchanged.
   */
  protected mapError(error: unknown, context: ExecutionContext): unknown {
    // Nobody is there to answer; an HttpException keeps Nest from logging a server error per client that gave up.
    if (error instanceof ClientLeftError) return new HttpException(CLIENT_CLOSED_REQUEST_BODY, 499, { cause: error });
    const response = describeLockError(error);
    if (!response) return error;
    switch (context.getType<string>()) {
      case 'http':
        if (error instanceof LockTimeoutError)
          this.setHeader(context, 'Retry-After', String(this.retryAfterSeconds(error)));
        return new HttpException(response, response.statusCode, { cause: error });
      case 'graphql':
        // @nestjs/graphql answers an HttpException as a GraphQL error with the body in its extensions.
        return new HttpException(response, response.statusCode, { cause: error });
      case 'rpc':
        return transportException('@nestjs/microservices', 'RpcException', response, error) ?? error;
      case 'ws':
        return transportException('@nestjs/websockets', 'WsException', response, error) ?? error;
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

/** Why a queued HTTP request stopped waiting: its client disconnected. */
class ClientLeftError extends Error {
  override readonly name = 'ClientLeftError';

  constructor() {
    super('the client disconnected while waiting for the lock');
  }
}

/** What nginx calls status 499; sent to a closed connection, so only logs and metrics ever see it. */
const CLIENT_CLOSED_REQUEST_BODY = {
  statusCode: 499,
  error: 'Client Closed Request',
  message: 'The client disconnected while waiting for the lock.',
};

/** The Node response under Express's (the same object) or Fastify's (`reply.raw`). */
function rawResponse(context: ExecutionContext): NodeResponseLike | undefined {
  const response = httpResponse(context);
  return response?.raw ?? response;
}

/**
 * Those packages are installed whenever an rpc or ws handler runs, but this library must not require them
 * otherwise. Their filters send the object to the client as the error.
 */
function transportException(
  packageName: string,
  className: string,
  response: LockErrorResponse,
  cause: unknown,
): Error | undefined {
  try {
    const exception = loadOptionalPackage<Record<string, new (error: object) => Error>>(
      packageName,
      'an rpc or ws handler',
    )[className];
    const mapped = new exception({ status: 'error', ...response });
    // Their constructors take no options: set the lock error behind them as HttpException's is, for
    // describeLockError in an app's exception filter (the transports send getError() only, never the cause).
    Object.defineProperty(mapped, 'cause', { value: cause, configurable: true, writable: true });
    return mapped;
  } catch (error) {
    // Only where the library cannot resolve the app's copy (not installed in the package that depends on the
    // library, in a monorepo): say so once, or every lock failure would reach the client as Nest's "Internal
    // server error" with nothing to tell why. The first line only: Node's require stack names the module that
    // first loaded this file, not the handler.
    if (!unloadable.has(packageName)) {
      unloadable.add(packageName);
      const reason = (error instanceof Error ? error.message : String(error)).split('\n')[0];
      new Logger(LOGGER_CONTEXT).warn(
        `Could not load ${packageName} from nest-distributed-lock (${reason}), ` +
          `so lock failures of ${className === 'RpcException' ? 'microservice' : 'WebSocket'} handlers are passed on as ` +
          `they are, not as ${className === 'RpcException' ? 'an' : 'a'} ${className}: add ${packageName} to the dependencies of the ` +
          `package that depends on nest-distributed-lock (it is an optional peer of it).`,
      );
    }
    return undefined;
  }
}

/** Packages transportException could not load, each warned about once. */
const unloadable = new Set<string>();
