import type { Client } from 'node-zookeeper-client';

/**
 * The calls outstanding on each client, as promises the connection can fail: node-zookeeper-client never fails
 * a queued request when its session expires, so ZooKeeperConnection does, and on close().
 */
export class PendingCalls {
  private readonly byClient = new Map<Client, Set<(error: unknown) => void>>();

  /** Runs one request on `client`; the promise settles with its callback, or with fail(). */
  run<T>(client: Client, run: (client: Client, done: (error: unknown, value?: T) => void) => void): Promise<T> {
    let calls = this.byClient.get(client);
    if (!calls) this.byClient.set(client, (calls = new Set()));
    const outstanding = calls;
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const fail = (error: unknown) => {
        if (settled) return;
        settled = true;
        outstanding.delete(fail);
        reject(error);
      };
      outstanding.add(fail);
      try {
        run(client, (error, value) => {
          if (settled) return;
          settled = true;
          outstanding.delete(fail);
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- node-zookeeper-client's Exception inherits Error at runtime; its @types omit that
          if (error) reject(error);
          else resolve(value as T);
        });
      } catch (error) {
        // node-zookeeper-client asserts its arguments synchronously (e.g. a malformed path).
        fail(error);
      }
    });
  }

  /** Rejects every call outstanding on `client` with `error`. */
  fail(client: Client, error: unknown): void {
    const calls = this.byClient.get(client);
    if (!calls) return;
    for (const fail of [...calls]) fail(error);
  }

  /** Rejects every call outstanding on any client with `error`. */
  failAll(error: unknown): void {
    for (const client of [...this.byClient.keys()]) this.fail(client, error);
  }

  /** Stops tracking a client that was replaced (its calls were failed already). */
  forget(client: Client): void {
    this.byClient.delete(client);
  }
}
