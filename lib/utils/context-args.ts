import type { ArgumentsHost } from '@nestjs/common';

/*
 * The same arguments Nest's switchToHttp() / switchToRpc() / switchToWs() getters return, read by index:
 * each switchTo...() call builds new closures and assigns them onto the context, which a fast lock pays for
 * several times per request.
 */

/** switchToHttp().getRequest() */
export function httpRequest(context: ArgumentsHost): any {
  return context.getArgByIndex(0);
}

/** switchToHttp().getResponse() */
export function httpResponse(context: ArgumentsHost): any {
  return context.getArgByIndex(1);
}

/** switchToRpc().getData() */
export function rpcData(context: ArgumentsHost): any {
  return context.getArgByIndex(0);
}

/** switchToWs().getData() */
export function wsData(context: ArgumentsHost): any {
  return context.getArgByIndex(1);
}
