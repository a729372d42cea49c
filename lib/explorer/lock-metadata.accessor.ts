import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { WithLockMetadata } from '../decorators/with-lock-metadata';
import { WITH_LOCK_METADATA } from '../distributed-lock.constants';

/** The Reflector look-ups the explorer needs, in one place. */
@Injectable()
export class LockMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  /** `@WithLock` on a method or on a class (anything else carries none). */
  getWithLock(target: unknown): WithLockMetadata | undefined {
    return typeof target === 'function'
      ? this.reflector.get<WithLockMetadata | undefined>(WITH_LOCK_METADATA, target)
      : undefined;
  }
}
