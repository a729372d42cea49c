import Redis from 'ioredis';
import { LockService, RedisLockBackend } from '../../lib';
import { num, Section } from '../lib/report';
import { BenchServers } from '../lib/servers';

export interface FootprintSettings {
  /** Distinct lock names, each taken and released once. */
  readonly names: number;
  /** Acquire + release cycles in flight at once. */
  readonly concurrency: number;
  /** How long to wait for the keys to expire after the last release before reporting what is left. */
  readonly drainBudgetMs: number;
}

export interface FootprintRow {
  readonly names: number;
  readonly cyclesPerSecond: number;
  readonly keysBefore: number;
  readonly keysAfterRelease: number;
  readonly keysAtEnd: number;
  readonly memoryBefore: number;
  readonly memoryAfterRelease: number;
  readonly memoryAtEnd: number;
  /** ms from the last release until no key of ours was left; NaN when the budget ran out first. */
  readonly drainedAfterMs: number;
}

const TTL_MS = 1_000;
const FENCE_RETENTION_MS = 1_000;
const PREFIX = 'footprint';

/**
 * Scenario 7 (issue 17's bounded footprint): take `names` distinct lock names once each on Redis, then watch
 * the fencing counters expire. Nothing should stay per name once its locks are gone: the key count and
 * used_memory return to where they started.
 */
export async function footprint(
  servers: BenchServers,
  settings: FootprintSettings,
): Promise<{ section: Section; rows: FootprintRow[] }> {
  const monitor = new Redis(servers.redis.url);
  const client = new Redis(servers.redis.url);
  const locks = new LockService(new RedisLockBackend({ client, fenceRetention: FENCE_RETENTION_MS }), {
    keyPrefix: PREFIX,
    defaults: { ttl: TTL_MS },
  });
  try {
    const keys = async () => (await monitor.eval(COUNT_KEYS_SCRIPT, 0, `${PREFIX}*`)) as number;
    const memory = async () => usedMemory(await monitor.info('memory'));
    const keysBefore = await keys();
    const memoryBefore = await memory();

    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: settings.concurrency }, async () => {
        while (next < settings.names) {
          const handle = await locks.acquire(`order:${next++}`);
          await handle.release();
        }
      }),
    );
    const released = performance.now();
    const keysAfterRelease = await keys();
    const memoryAfterRelease = await memory();

    let drainedAfterMs = NaN;
    while (performance.now() - released < settings.drainBudgetMs) {
      if ((await keys()) <= keysBefore) {
        drainedAfterMs = performance.now() - released;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const row: FootprintRow = {
      names: settings.names,
      cyclesPerSecond: (settings.names * 1000) / (released - started),
      keysBefore,
      keysAfterRelease,
      keysAtEnd: await keys(),
      memoryBefore,
      memoryAfterRelease,
      memoryAtEnd: await memory(),
      drainedAfterMs,
    };
    return { section: section(settings, row), rows: [row] };
  } finally {
    await locks.close();
    client.disconnect();
    monitor.disconnect();
  }
}

/** Counts our keys on the server (SCAN in a script: one round trip, and KEYS would block on a big keyspace). */
const COUNT_KEYS_SCRIPT = `
local cursor, count = '0', 0
repeat
  local reply = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 10000)
  cursor = reply[1]
  count = count + #reply[2]
until cursor == '0'
return count
`;

function usedMemory(info: string): number {
  const match = /^used_memory:(\d+)/m.exec(info);
  return match ? Number(match[1]) : NaN;
}

const mib = (bytes: number) => num(bytes / 1024 / 1024, 1);

function section(settings: FootprintSettings, row: FootprintRow): Section {
  return {
    heading: `7. Footprint: ${settings.names.toLocaleString('en-US')} lock names taken once (Redis)`,
    text: [
      `One LockService (RedisLockBackend, ttl ${TTL_MS / 1000} s, fenceRetention ${FENCE_RETENTION_MS / 1000} s) takes ` +
        `${settings.names.toLocaleString('en-US')} distinct names once each, ${settings.concurrency} at a time, and releases them. ` +
        'A released name leaves only its fencing counter, which expires after ttl + fenceRetention; the bench then polls the key count ' +
        `(SCAN in a script) every 250 ms for up to ${settings.drainBudgetMs / 1000} s. used_memory is Redis's own INFO figure.`,
    ],
    tables: [
      {
        title: 'Redis keys and memory',
        notes: [`${num(row.cyclesPerSecond, 0)} acquire + release cycles/s while taking the names.`],
        headers: ['when', 'our keys', 'used_memory MiB'],
        rows: [
          ['before', num(row.keysBefore, 0), mib(row.memoryBefore)],
          ['right after the last release', num(row.keysAfterRelease, 0), mib(row.memoryAfterRelease)],
          [
            Number.isFinite(row.drainedAfterMs)
              ? `${num(row.drainedAfterMs / 1000, 1)} s later (all expired)`
              : `${settings.drainBudgetMs / 1000} s later (budget ran out)`,
            num(row.keysAtEnd, 0),
            mib(row.memoryAtEnd),
          ],
        ],
      },
    ],
  };
}
