import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { WithLockMetadata } from '../decorators/with-lock-metadata';
import { WITH_LOCK_METADATA } from '../distributed-lock.constants';

/** The Reflector look-ups the explorer needs, in one place. */
@Injectable()
export class LockMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  /** `@WithLock` on a method or on a class. */
  getWithLock(target: Function): WithLockMetadata | undefined {
    return this.reflector.get<WithLockMetadata | undefined>(WITH_LOCK_METADATA, target);
  }
}
