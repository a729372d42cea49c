import type { ExecutionContext } from '@nestjs/common';
import { graphqlArgs, httpRequest, rpcData, wsData } from '../utils/context-args';
import type { Placeholder } from './parse-key-template';
import { readPath } from './read-path';
import type { PlaceholderLookup } from './render-key-template';

type RequestSource = 'params' | 'query' | 'body' | 'headers' | 'user';
const EXPLICIT_SOURCES: ReadonlySet<string> = new Set<RequestSource>(['params', 'query', 'body', 'headers', 'user']);
/** Where a bare `<<name>>` is looked for, in order. */
const BARE_NAME_SOURCES: readonly RequestSource[] = ['params', 'query', 'body'];

/**
 * Resolves placeholders for a Nest handler: HTTP requests, the message payload of RPC and WebSocket handlers, or
 * a GraphQL resolver's arguments.
 */
export function contextLookup(context: ExecutionContext): PlaceholderLookup {
  const type = context.getType<string>();
  switch (type) {
    case 'http':
      return httpLookup(httpRequest(context));
    case 'rpc':
      return payloadLookup(rpcData(context));
    case 'ws':
      return payloadLookup(wsData(context));
    case 'graphql':
      return payloadLookup(graphqlArgs(context));
    default:
      throw new TypeError(
        `@WithLock key templates with placeholders work in http, rpc, ws and graphql handlers, not in "${type}" ones. ` +
          `Pass a function instead: @WithLock((context) => 'key:' + ...).`,
      );
  }
}

/**
 * `<<params.id>>`, `<<query.v>>`, `<<body.order.id>>`, `<<headers.x-tenant>>`, `<<user.id>>` name their source.
 * A bare name (`<<id>>`, `<<order.id>>`, also `<<user>>` alone) is looked up in route params, then query, then body.
 */
export function httpLookup(request: unknown): PlaceholderLookup {
  return ({ path }: Placeholder) => {
    const first = path[0];
    // Indexing, not `[first, ...rest] = path`: that builds an array on every request for the common `<<id>>`.
    if (path.length > 1 && EXPLICIT_SOURCES.has(first)) {
      const rest = path.slice(1);
      const source = readSource(request, first as RequestSource);
      // Node lower-cases incoming header names.
      return readPath(source, first === 'headers' ? [rest[0].toLowerCase(), ...rest.slice(1)] : rest);
    }
    for (const name of BARE_NAME_SOURCES) {
      const value = readPath(readSource(request, name), path);
      if (value !== undefined) return value;
    }
    return undefined;
  };
}

/** RPC, WebSocket and GraphQL: the name is a path into the message payload or the resolver's arguments (`<<id>>` is `data.id`). */
export function payloadLookup(payload: unknown): PlaceholderLookup {
  return ({ path }: Placeholder) => readPath(payload, path);
}

function readSource(request: unknown, source: RequestSource): unknown {
  if (request === null || typeof request !== 'object') return undefined;
  // Framework-populated fields (not user-controlled property names), so a plain read is fine here.
  return (request as Record<RequestSource, unknown>)[source];
}
