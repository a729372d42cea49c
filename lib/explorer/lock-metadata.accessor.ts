import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { WithLockMetadata } from '../decorators/with-lock-metadata';
import { WITH_LOCK_METADATA } from '../distributed-lock.constants';

/**
 * What `@SubscribeMessage` sets on a WebSocket gateway's handler (Nest 5 to 12). Read by its value: the
 * constant lives under a deep path of @nestjs/websockets, an optional package.
 */
const WS_MESSAGE_HANDLER_METADATA = 'websockets:message_mapping';

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

  /**
   * A WebSocket gateway's `@SubscribeMessage` handler. Nest calls it from the prototype through the gateway's
   * interceptors, so `@WithLock` there is LockInterceptor's job, with placeholders read from the message payload.
   */
  isWebSocketHandler(method: unknown): boolean {
    return typeof method === 'function' && this.reflector.get<unknown>(WS_MESSAGE_HANDLER_METADATA, method) === true;
  }
}
