import { WITH_LOCK_METADATA } from '../distributed-lock.constants';
import { lockAllHandlers, lockHandler } from '../interceptors/locked-handler';
import { InvalidKeyTemplateError } from '../key-template/invalid-key-template.error';
import { parseKeyTemplate } from '../key-template/parse-key-template';
import type { LockOptions } from '../lock-options';
import { resolveLockOptions } from '../utils/validate';
import type { LockKeys, WithLockMetadata } from './with-lock-metadata';

/**
 * Runs a controller handler (or every handler of a controller), or a provider method, while holding the
 * lock(s) named by `keys`: `'file:<<id>>'`, `['account:<<from>>', 'account:<<to>>']`, or `(context) => key`.
 * Templates are parsed here, so a malformed one fails when the app starts.
 *
 * The handler is wrapped here too (see locked-handler.ts): the lock is taken after guards, interceptors and
 * pipes have run, and held around the handler and the Observable it returns.
 */
export function WithLock(keys: LockKeys, options: LockOptions = {}): ClassDecorator & MethodDecorator {
  const metadata = compileWithLock(keys, options);
  return ((target: object, methodName?: string | symbol, descriptor?: PropertyDescriptor) => {
    if (descriptor) {
      // Also on the original: the provider explorer and Reflector users may hold either function.
      if (typeof descriptor.value === 'function') Reflect.defineMetadata(WITH_LOCK_METADATA, metadata, descriptor.value);
      descriptor.value = lockHandler(target, methodName!, descriptor.value, metadata, true);
      return descriptor;
    }
    Reflect.defineMetadata(WITH_LOCK_METADATA, metadata, target);
    lockAllHandlers(target as Function, metadata);
    return target;
  }) as ClassDecorator & MethodDecorator;
}

function compileWithLock(keys: LockKeys, options: LockOptions): WithLockMetadata {
  checkOptions(options);
  // Frozen copies: LockService resolves frozen options (with a family) once, not on every call.
  if (typeof keys === 'function') return { templates: [], factory: keys, options: Object.freeze({ ...options }) };
  const list: readonly unknown[] = Array.isArray(keys) ? keys : [keys];
  if (list.length === 0) {
    throw new InvalidKeyTemplateError('[]', 'pass at least one key template, e.g. @WithLock(["account:<<from>>", "account:<<to>>"]).');
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
    throw new TypeError('@WithLock does not take a signal: the interceptor cancels the wait itself when the client goes away.');
  }
  try {
    resolveLockOptions(options, undefined);
  } catch (error) {
    throw new TypeError(`Invalid @WithLock options: ${(error as Error).message}`);
  }
}
