import type { ExecutionContext } from '@nestjs/common';
import type { KeyTemplate } from '../key-template/parse-key-template';
import type { LockOptions } from '../lock-options';

/**
 * Builds the key(s) in code. On a controller it receives the handler's ExecutionContext; on a provider
 * method, a context whose `getArgs()` are the call's arguments and whose `getType()` is `'method'`.
 * Its result is used as written: encode user input in it with `encodeKeyPart()`.
 */
export type LockKeyFactory = (context: ExecutionContext) => string | readonly string[];

/** A key template such as `'file:<<id>>'`, several of them, or a function. */
export type LockKeys = string | readonly string[] | LockKeyFactory;

/** What `@WithLock` stores, compiled once when the decorator is applied. */
export interface WithLockMetadata {
  /** @internal The parsed templates, unless `factory` is set. */
  readonly templates: readonly KeyTemplate[];
  readonly factory?: LockKeyFactory;
  readonly options: LockOptions;
}
