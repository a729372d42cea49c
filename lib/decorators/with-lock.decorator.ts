import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { WITH_LOCK_METADATA } from '../distributed-lock.constants';
import { LockInterceptor } from '../interceptors/lock.interceptor';
import { InvalidKeyTemplateError } from '../errors/invalid-key-template.error';
import { parseKeyTemplate } from '../key-template/parse-key-template';
import type { LockOptions } from '../lock-options';
import { resolveLockOptions } from '../utils/validate';
import { lockableMethod } from './lockable-method';
import type { LockKeys, WithLockMetadata } from './with-lock-metadata';

/**
 * Runs a controller handler (or every handler of a controller), or a provider method, while holding the
 * lock(s) named by `keys`: `'file:<<id>>'`, `['account:<<from>>', 'account:<<to>>']`, or `(context) => key`.
 * Templates are parsed here, so a malformed one fails when the app starts.
 *
 * On a controller it is metadata plus `@UseInterceptors(LockInterceptor)`: the lock is taken where that
 * interceptor sits in Nest's chain (after guards, before pipes) and held around the handler and the
 * Observable it returns. On a method it also puts a stand-in on the prototype, which runs the locked version the
 * module's explorer binds to a provider's instance at startup (lockable-method.ts).
 */
export function WithLock(keys: LockKeys, options: LockOptions = {}): ClassDecorator & MethodDecorator {
  const decorate = applyDecorators(
    SetMetadata(WITH_LOCK_METADATA, compileWithLock(keys, options)),
    UseInterceptors(LockInterceptor),
  );
  return ((target: object, methodName?: string | symbol, descriptor?: PropertyDescriptor) => {
    if (methodName === undefined) return decorate(target);
    if (typeof descriptor?.value !== 'function') {
      throw new TypeError(`@WithLock goes on a method or a class; ${String(methodName)} is not a method.`);
    }
    decorate(target, methodName, descriptor);
    // The stand-in carries the metadata just set, and runs the locked version once the module bound one.
    return { ...descriptor, value: lockableMethod(descriptor.value as (...args: unknown[]) => unknown) };
  }) as ClassDecorator & MethodDecorator;
}

function compileWithLock(keys: LockKeys, options: LockOptions): WithLockMetadata {
  checkOptions(options);
  // Frozen copies: LockService resolves frozen options (with a family) once, not on every call.
  if (typeof keys === 'function') return { templates: [], factory: keys, options: Object.freeze({ ...options }) };
  const list: readonly unknown[] = Array.isArray(keys) ? keys : [keys];
  if (list.length === 0) {
    throw new InvalidKeyTemplateError(
      '[]',
      'pass at least one key template, e.g. @WithLock(["account:<<from>>", "account:<<to>>"]).',
    );
  }
  const templates = list.map((template) => parseKeyTemplate(template));
  // Metrics are labelled by the template, never by resolved keys, so their cardinality stays small.
  const family = options.family ?? templates.map((template) => template.source).join(' + ');
  return { templates, options: Object.freeze({ ...options, family }) };
}

/** Catches typos and impossible numbers now; the combination with module defaults is checked per acquisition. */
function checkOptions(options: LockOptions): void {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`@WithLock options must be an object such as { ttl: 30000 }, got ${String(options)}.`);
  }
  if ('signal' in options) {
    throw new TypeError(
      '@WithLock does not take a signal: the interceptor cancels the wait itself when the client goes away.',
    );
  }
  try {
    resolveLockOptions(options, undefined);
  } catch (error) {
    throw new TypeError(`Invalid @WithLock options: ${(error as Error).message}`, { cause: error });
  }
}
