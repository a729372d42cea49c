import { closeAllProxies } from './fault-proxy';
import { killAllChaosWorkers } from './workers';

/**
 * Owns what one scenario starts (servers, proxies, the register, clients) and closes it newest first,
 * whatever happened; workers are resumed and killed first, so none is left behind stopped.
 */
export class Scope {
  private readonly closers: (() => unknown)[] = [];

  defer<T extends { stop(): Promise<unknown> } | { close(): unknown }>(resource: T): T {
    this.closers.push(() => ('stop' in resource ? resource.stop() : resource.close()));
    return resource;
  }

  onClose(close: () => unknown): void {
    this.closers.push(close);
  }

  async close(): Promise<void> {
    await killAllChaosWorkers();
    const errors: unknown[] = [];
    for (const close of this.closers.splice(0).reverse()) {
      try {
        await close();
      } catch (error) {
        errors.push(error);
      }
    }
    await closeAllProxies();
    if (errors.length > 0) throw new AggregateError(errors, 'closing the scenario failed');
  }
}

/** Runs `body` with a fresh scope and always closes it. */
export async function withScope<T>(body: (scope: Scope) => Promise<T>): Promise<T> {
  const scope = new Scope();
  try {
    return await body(scope);
  } finally {
    await scope.close();
  }
}
