import { Etcd3 } from 'etcd3';
import Redis from 'ioredis';
import { performance } from 'node:perf_hooks';

/** Lets time pass while faults play out (never used to decide an ordering a check relies on). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `probe` every `everyMs` until it returns a truthy value; rejects naming `what` after `timeoutMs`. */
export async function pollUntil<T>(
  what: string,
  probe: () => Promise<T> | T,
  timeoutMs: number,
  everyMs = 50,
): Promise<NonNullable<T>> {
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (error) {
      lastError = error;
    }
    if (performance.now() > deadline) {
      throw new Error(
        `${what} did not happen within ${timeoutMs} ms${lastError ? ` (last error: ${lastError instanceof Error ? String(lastError) : JSON.stringify(lastError)})` : ''}`,
      );
    }
    await sleep(everyMs);
  }
}

/** A raw Redis client for the parent's own inspection, closed with the scope. */
export function adminRedis(url: string): Redis & { stop(): Promise<void> } {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  return Object.assign(client, {
    async stop() {
      if (client.status === 'ready') await client.quit().catch(() => undefined);
      client.disconnect();
    },
  });
}

/** A raw etcd client for the parent's own inspection, closed with the scope. */
export function adminEtcd(hosts: string | string[]): Etcd3 & { stop(): Promise<void> } {
  const client = new Etcd3({ hosts });
  return Object.assign(client, { stop: async () => client.close() });
}

/** The keys under `prefix` with their create revisions, oldest first. */
export async function etcdContenders(
  client: Etcd3,
  prefix: string,
): Promise<{ key: string; createRevision: bigint; lease: string }[]> {
  const response = await client.kv.range({
    key: Buffer.from(prefix),
    range_end: prefixEnd(Buffer.from(prefix)),
    keys_only: true,
    sort_target: 2,
    sort_order: 1,
  });
  return response.kvs.map((kv) => ({
    key: kv.key.toString(),
    createRevision: BigInt(kv.create_revision),
    lease: String(kv.lease),
  }));
}

function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

/** Parses `INFO` text into name -> value. */
export function parseInfo(info: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of info.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

/** `calls=3,usec=...` -> the number after `name=`. */
export function statField(stat: string | undefined, name: string): number {
  const match = stat?.match(new RegExp(`(?:^|,)${name}=(\\d+)`));
  return match ? Number(match[1]) : 0;
}

export function randomBetween(low: number, high: number): number {
  return low + Math.random() * (high - low);
}
