import type { ExecutionContext, Type } from '@nestjs/common';

// Nest exports these hosts' interfaces only from a deep path: typed through ExecutionContext instead.
type HttpArgumentsHost = ReturnType<ExecutionContext['switchToHttp']>;
type RpcArgumentsHost = ReturnType<ExecutionContext['switchToRpc']>;
type WsArgumentsHost = ReturnType<ExecutionContext['switchToWs']>;

/** The context type a key function sees for a provider method (`context.getArgs()` are the arguments). */
export const METHOD_CONTEXT_TYPE = 'method';

/**
 * What a `@WithLock` key function receives for a provider method: the call's arguments, its class and method.
 * Built here rather than with Nest's internal ExecutionContextHost, which is no public API.
 */
export class MethodExecutionContext implements ExecutionContext {
  constructor(
    private readonly args: unknown[],
    private readonly host: Type<unknown>,
    private readonly handler: Function,
  ) {}

  getClass<T = unknown>(): Type<T> {
    return this.host as Type<T>;
  }

  getHandler(): Function {
    return this.handler;
  }

  getArgs<T extends unknown[] = unknown[]>(): T {
    return this.args as T;
  }

  getArgByIndex<T = unknown>(index: number): T {
    return this.args[index] as T;
  }

  getType<T extends string = string>(): T {
    return METHOD_CONTEXT_TYPE as T;
  }

  // A provider method has no transport: these read the arguments by position, as Nest's own hosts do.
  switchToHttp(): HttpArgumentsHost {
    return {
      getRequest: <T>() => this.args[0] as T,
      getResponse: <T>() => this.args[1] as T,
      getNext: <T>() => this.args[2] as T,
    };
  }

  switchToRpc(): RpcArgumentsHost {
    return {
      getData: <T>() => this.args[0] as T,
      getContext: <T>() => this.args[1] as T,
    };
  }

  switchToWs(): WsArgumentsHost {
    return {
      getClient: <T>() => this.args[0] as T,
      getData: <T>() => this.args[1] as T,
      getPattern: () => this.args[this.args.length - 1] as string,
    };
  }
}
