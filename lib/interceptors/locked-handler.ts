import { createParamDecorator, ExecutionContext, Injectable, Optional, PipeTransform } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { currentLockFactory } from '../decorators/current-lock.decorator';
import type { WithLockMetadata } from '../decorators/with-lock-metadata';
import { WITH_LOCK_METADATA } from '../distributed-lock.constants';
import { LockError } from '../errors/lock-error';
import type { LockSet } from './lock-set';
import { LockInterceptor } from './lock.interceptor';

/*
 * @WithLock does not go through Nest's interceptor chain: on a trivial route, a pass-through interceptor alone
 * costs about a third of the requests per second (an AsyncResource and several RxJS operators per request). Instead the
 * decorator wraps the handler and adds one hidden parameter, filled by Nest like any custom parameter. Its pipe
 * is resolved by dependency injection in the controller's module and brings the LockInterceptor, which locks the
 * call. Called any other way (a unit test calling the method, or a provider's own code), the wrapper only
 * forwards, as an interceptor would not have run either.
 */

const LOCKED_HANDLER = Symbol('DISTRIBUTED_LOCK:LOCKED_HANDLER');

interface LockedHandlerState {
  readonly original: Function;
  metadata: WithLockMetadata;
  /** True when the method's own @WithLock installed it; a class-level @WithLock then leaves it alone. */
  readonly fromMethod: boolean;
}

/** What the hidden parameter hands the wrapper: the call's context and the interceptor that locks it. */
export class LockedCall {
  constructor(
    readonly context: ExecutionContext,
    readonly interceptor: LockInterceptor | undefined,
  ) {}
}

/** Resolved per module by Nest; the interceptor is missing when that module cannot see DistributedLockModule. */
@Injectable()
export class LockedCallPipe implements PipeTransform<ExecutionContext, LockedCall> {
  constructor(@Optional() readonly interceptor?: LockInterceptor) {}

  transform(context: ExecutionContext): LockedCall {
    return new LockedCall(context, this.interceptor);
  }
}

const lockedCallFactory = (_data: unknown, context: ExecutionContext): ExecutionContext => context;
const LockedCallParam = createParamDecorator(lockedCallFactory);

/**
 * The module of a @WithLock controller cannot see DistributedLockModule: thrown at startup (by the module's
 * explorer), or per call when no DistributedLockModule is imported anywhere.
 */
export class LockModuleMissingError extends LockError {
  override readonly name = 'LockModuleMissingError';
}

/** Wraps one method for @WithLock; a second @WithLock on the same method replaces the first one's metadata. */
export function lockHandler(
  prototype: object,
  methodName: string | symbol,
  existing: unknown,
  metadata: WithLockMetadata,
  fromMethod: boolean,
): Function {
  if (typeof existing !== 'function') {
    throw new TypeError(`@WithLock goes on a method or a class; ${String(methodName)} is not a method.`);
  }
  const state = lockedHandlerState(existing);
  if (state) {
    if (fromMethod) Reflect.defineMetadata(WITH_LOCK_METADATA, metadata, existing);
    if (fromMethod || !state.fromMethod) state.metadata = metadata;
    return existing;
  }
  return wrap(prototype, methodName, existing, metadata, fromMethod);
}

/** Every method of a `@WithLock` class, except those with their own @WithLock. */
export function lockAllHandlers(target: Function, metadata: WithLockMetadata): void {
  const seen = new Set<string | symbol>(['constructor']);
  for (let prototype = target.prototype; prototype && prototype !== Object.prototype; prototype = Object.getPrototypeOf(prototype)) {
    for (const name of Reflect.ownKeys(prototype)) {
      if (seen.has(name)) continue;
      seen.add(name);
      const descriptor = Object.getOwnPropertyDescriptor(prototype, name);
      if (!descriptor || typeof descriptor.value !== 'function') continue;
      const state = lockedHandlerState(descriptor.value);
      if (state?.fromMethod) continue;
      if (prototype === target.prototype && state) {
        state.metadata = metadata;
        continue;
      }
      // An inherited method gets its own wrapper here, so the base class keeps its own lock (or none).
      const wrapped = wrap(target.prototype, name, state?.original ?? descriptor.value, metadata, false);
      Object.defineProperty(target.prototype, name, { ...descriptor, value: wrapped });
    }
  }
}

export function isLockedHandler(method: unknown): boolean {
  return lockedHandlerState(method) !== undefined;
}

/** The method as written, under the wrapper (the explorer reads parameter names from it). */
export function unwrapLockedHandler(method: Function): Function {
  return lockedHandlerState(method)?.original ?? method;
}

function lockedHandlerState(method: unknown): LockedHandlerState | undefined {
  return typeof method === 'function' ? (method as unknown as Record<symbol, LockedHandlerState | undefined>)[LOCKED_HANDLER] : undefined;
}

function wrap(prototype: object, methodName: string | symbol, original: Function, metadata: WithLockMetadata, fromMethod: boolean): Function {
  const host = prototype.constructor;
  // Parameter decorators run before method and class decorators, so every parameter is known here.
  const params: Record<string, { index: number; factory?: unknown }> = Reflect.getMetadata(ROUTE_ARGS_METADATA, host, methodName) ?? {};
  const paramtypes: unknown[] = Reflect.getMetadata('design:paramtypes', prototype, methodName) ?? [];
  // A base class's hidden parameter is inherited in `params`; this wrapper takes its place.
  const indexes = Object.values(params)
    .filter((param) => param.factory !== lockedCallFactory)
    .map((param) => param.index);
  const hidden = Math.max(original.length, paramtypes.length, ...indexes.map((index) => index + 1));
  const currentLockIndexes = Object.values(params)
    .filter((param) => param.factory === currentLockFactory)
    .map((param) => param.index);
  const state: LockedHandlerState = { original, metadata, fromMethod };

  const locked = function (this: unknown, ...args: unknown[]): unknown {
    const call = args[hidden];
    if (!(call instanceof LockedCall)) return original.apply(this, args);
    args.length = hidden;
    if (!call.interceptor) throw lockModuleMissing(host, methodName);
    return call.interceptor.runHandler(call.context, state.metadata, (locks: LockSet) => {
      if (currentLockIndexes.length > 0) {
        const value = locks.single ?? locks.handles;
        for (const index of currentLockIndexes) args[index] = value;
      }
      return original.apply(this, args);
    });
  };
  Object.defineProperty(locked, 'name', { value: original.name });
  Object.defineProperty(locked, 'length', { value: original.length });
  // Decorators applied before this one left their metadata on the original; those after it write to the wrapper.
  for (const key of Reflect.getMetadataKeys(original)) Reflect.defineMetadata(key, Reflect.getMetadata(key, original), locked);
  // A class-level @WithLock keeps its metadata on the class, where the explorer and Reflector look for it.
  if (fromMethod) Reflect.defineMetadata(WITH_LOCK_METADATA, metadata, locked);
  Object.defineProperty(locked, LOCKED_HANDLER, { value: state });
  LockedCallParam(undefined, LockedCallPipe)(prototype, methodName as string, hidden);
  return locked;
}

export function lockModuleMissing(host: Function, methodName: string | symbol, moduleName?: string): LockModuleMissingError {
  return new LockModuleMissingError(
    `@WithLock on ${host.name}.${String(methodName)} has no LockService: import DistributedLockModule.forRoot(...) into ` +
      `${moduleName ?? `the module that declares ${host.name}`}, or register it once with { isGlobal: true }.`,
  );
}
