import { MethodExecutionContext } from '../../../lib/explorer/method-execution-context';

/** An ExecutionContext of any type ('rpc', 'ws', 'graphql') over the given arguments, built without Nest internals. */
export class TypedContext extends MethodExecutionContext {
  constructor(
    private readonly type: string,
    args: unknown[],
    host: Function = Object,
    handler: Function = () => undefined,
  ) {
    super(args, host as never, handler);
  }

  override getType<T extends string = string>(): T {
    return this.type as T;
  }
}
