import { createHash } from 'node:crypto';
import type { RedisPort } from './port/redis-port';

/** The two script commands of an ioredis Redis (and Cluster), as the public client type spells them. */
export interface ScriptRunner {
  evalsha(sha1: string, numkeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  eval(script: string, numkeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
}

/**
 * A Lua script run with EVALSHA, falling back to EVAL once when the server does not know it (NOSCRIPT:
 * after a restart, a failover or SCRIPT FLUSH). EVAL also loads it into the script cache, so the next call
 * is an EVALSHA again. We do not use ioredis' defineCommand: it would add methods to the app's client.
 */
export class RedisScript {
  readonly sha1: string;

  constructor(
    readonly name: string,
    readonly source: string,
  ) {
    this.sha1 = createHash('sha1').update(source, 'utf8').digest('hex');
  }

  /** One reaction on top of the client's promise (not an async function's two): this runs on every lock call. */
  run(client: ScriptPort, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    let reply: Promise<unknown>;
    try {
      reply = client.evalsha(this.sha1, keys, args);
    } catch (error) {
      return Promise.reject(error);
    }
    return reply.then(undefined, (error: unknown) => {
      if (!isNoScriptError(error)) throw error;
      return this.runSource(client, keys, args);
    });
  }

  /** EVAL with the source, which also loads the script: for when the server is known not to have it. */
  runSource(client: ScriptPort, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return client.eval(this.source, keys, args);
  }
}

/** What running a script needs of the port. */
export type ScriptPort = Pick<RedisPort, 'evalsha' | 'eval'>;

export function isNoScriptError(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
