import type { ArgumentsHost } from '@nestjs/common';

/*
 * The same arguments Nest's switchToHttp() / switchToRpc() / switchToWs() getters return, read by index:
 * each switchTo...() call builds new closures and assigns them onto the context, which a fast lock pays for
 * several times per request.
 */

/** What this library reads of an HTTP request (Express or Fastify); any of it may be missing. */
export interface HttpRequestLike {
  headers?: Record<string, string | string[] | undefined>;
  /** Fastify's request id. */
  id?: unknown;
}

/** What this library uses of a Node response. */
export interface NodeResponseLike {
  once?: (event: string, listener: () => void) => unknown;
  writableFinished?: boolean;
  /** True once the connection closed (Node sets it before 'close' fires). */
  destroyed?: boolean;
  setHeader?: (name: string, value: string) => unknown;
}

/** Express's response (a Node response) or Fastify's reply (the Node response in `raw`). */
export interface HttpResponseLike extends NodeResponseLike {
  raw?: NodeResponseLike;
}

/** switchToHttp().getRequest() */
export function httpRequest(context: ArgumentsHost): HttpRequestLike | undefined {
  return context.getArgByIndex<HttpRequestLike | undefined>(0);
}

/** switchToHttp().getResponse() */
export function httpResponse(context: ArgumentsHost): HttpResponseLike | undefined {
  return context.getArgByIndex<HttpResponseLike | undefined>(1);
}

/** switchToRpc().getData() */
export function rpcData(context: ArgumentsHost): unknown {
  return context.getArgByIndex<unknown>(0);
}

/** switchToWs().getData() */
export function wsData(context: ArgumentsHost): unknown {
  return context.getArgByIndex<unknown>(1);
}

/** GqlExecutionContext.getArgs(): a resolver's arguments (root, args, context, info). */
export function graphqlArgs(context: ArgumentsHost): unknown {
  return context.getArgByIndex<unknown>(1);
}
