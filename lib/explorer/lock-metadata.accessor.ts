import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { WithLockMetadata } from '../decorators/with-lock-metadata';
import { WITH_LOCK_METADATA } from '../distributed-lock.constants';

/**
 * What `@SubscribeMessage` sets on a WebSocket gateway's handler (Nest 5 to 12), and what GraphQL resolver methods
 * carry (`@Query`, `@Mutation`, `@Subscription`: their type; `@ResolveField`: a flag) (@nestjs/graphql 13 and 14). Read by
 * value: the constants live under deep paths of optional packages.
 */
const WS_MESSAGE_HANDLER_METADATA = 'websockets:message_mapping';
const GRAPHQL_ROOT_RESOLVER_METADATA = 'graphql:resolver_type';
const GRAPHQL_FIELD_RESOLVER_METADATA = 'graphql:resolve_property';

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
   * A handler Nest calls from the prototype through its interceptors: a WebSocket gateway's `@SubscribeMessage`
   * method or a GraphQL resolver method. `@WithLock` there is LockInterceptor's job, with placeholders read from
   * the message payload or the resolver's arguments.
   */
  isInterceptedHandler(method: unknown): boolean {
    if (typeof method !== 'function') return false;
    return (
      this.reflector.get<unknown>(WS_MESSAGE_HANDLER_METADATA, method) === true ||
      this.reflector.get<unknown>(GRAPHQL_ROOT_RESOLVER_METADATA, method) !== undefined ||
      this.reflector.get<unknown>(GRAPHQL_FIELD_RESOLVER_METADATA, method) === true
    );
  }
}
