/* eslint-disable @typescript-eslint/prefer-promise-reject-errors -- node-zookeeper-client's Exception inherits Error at runtime; its @types omit that */
/**
 * Rough figures on a local ZooKeeper 3.8 (not a test; prints them): uncontended tryAcquire + release per second
 * from one sequential caller, beside the raw limit (node-zookeeper-client create of an ephemeral sequential node +
 * remove, on a path that exists) in interleaved rounds, and the wake-up latency from a holder's release to the
 * next waiter's grant.
 * Run: node --require ./test/support/ts-register.js bench/standalone/zookeeper.ts [--fsync]
 * With --fsync the server fsyncs its log on every write, as in production (and as the etcd figures do).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Client, CreateMode, createClient } from 'node-zookeeper-client';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper-lock.backend';
import { startZooKeeper } from '../../test/support/zookeeper-server';

const DURATION_MS = 2_000;
const WAKE_UP_RUNS = 20;
const ROUNDS = 8;

/** One cycle of the raw limit: what a lock needs at the least, one create and one delete. */
function rawCycle(client: Client): Promise<void> {
  return new Promise((resolve, reject) =>
    client.create('/bench-raw/uncontended/lock-', Buffer.from('x'), CreateMode.EPHEMERAL_SEQUENTIAL, (error, path) => {
      if (error) return reject(error);
      client.remove(path, -1, (removeError) => (removeError ? reject(removeError) : resolve()));
    }),
  );
}

function connectRaw(connectionString: string): Promise<Client> {
  const client = createClient(connectionString, { sessionTimeout: 10_000 });
  return new Promise((resolve, reject) => {
    client.once('connected', () =>
      client.mkdirp('/bench-raw/uncontended', (error) => (error ? reject(error) : resolve(client))),
    );
    client.connect();
  });
}

/** Cycles per second of `cycle` for `ms`. */
async function rate(cycle: () => Promise<void>, ms: number): Promise<number> {
  let cycles = 0;
  const start = performance.now();
  const endAt = start + ms;
  while (performance.now() < endAt) {
    await cycle();
    cycles++;
  }
  return (cycles * 1_000) / (performance.now() - start);
}

const medianOf = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const request = (key: string) => ({ namespace: 'bench', key, token: randomUUID(), ttl: 10_000 });

async function main(): Promise<void> {
  const forceSync = process.argv.includes('--fsync');
  const server = await startZooKeeper({ forceSync });
  console.log(`ZooKeeper 3.8, forceSync=${forceSync ? 'yes' : 'no'}`);
  const holderSide = new ZooKeeperLockBackend({ connectionString: server.connectionString, sessionTimeout: 10_000 });
  const waiterSide = new ZooKeeperLockBackend({ connectionString: server.connectionString, sessionTimeout: 10_000 });
  try {
    // Warm-up: JIT on both sides, connections up.
    for (let i = 0; i < 200; i++) {
      const warm = request('warm-up');
      await holderSide.release({ ...warm, fencingToken: 0n, state: (await holderSide.tryAcquire(warm))!.state });
    }

    const ours = async () => {
      const lock = request('uncontended');
      const grant = await holderSide.tryAcquire(lock);
      if (!grant) throw new Error('the key should be free');
      await holderSide.release({ ...lock, fencingToken: grant.fencingToken, state: grant.state });
    };
    const raw = await connectRaw(server.connectionString);
    try {
      for (let i = 0; i < 200; i++) await rawCycle(raw);
      // Interleaved rounds, the order alternating: the machine's speed drifts, a ratio within one round does not.
      const oursRates: number[] = [];
      const rawRates: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const slice = DURATION_MS / 2;
        if (round % 2 === 0) {
          oursRates.push(await rate(ours, slice));
          rawRates.push(await rate(() => rawCycle(raw), slice));
        } else {
          rawRates.push(await rate(() => rawCycle(raw), slice));
          oursRates.push(await rate(ours, slice));
        }
      }
      const ratio = medianOf(oursRates.map((value, round) => value / rawRates[round]));
      console.log(
        `uncontended tryAcquire+release: ${Math.round(medianOf(oursRates))} cycles/s; raw create + remove: ` +
          `${Math.round(medianOf(rawRates))} cycles/s; ours/raw ${ratio.toFixed(2)}x (median of ${ROUNDS} interleaved rounds)`,
      );
    } finally {
      raw.close();
    }

    const latencies: number[] = [];
    for (let run = 0; run < WAKE_UP_RUNS; run++) {
      const held = request('wake-up');
      const grant = (await holderSide.tryAcquire(held))!;
      const waiting = request('wake-up');
      let grantedAt = 0;
      const granted = waiterSide.acquire(waiting, new AbortController().signal).then((next) => {
        grantedAt = performance.now();
        return next;
      });
      // Setup only: let the waiter queue and arm its watch before the release is timed.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const releasedAt = performance.now();
      await holderSide.release({ ...held, fencingToken: grant.fencingToken, state: grant.state });
      const next = await granted;
      latencies.push(grantedAt - releasedAt);
      await waiterSide.release({ ...waiting, fencingToken: next.fencingToken, state: next.state });
    }
    latencies.sort((a, b) => a - b);
    const median = latencies[Math.floor(latencies.length / 2)];
    console.log(
      `wake-up (release -> next waiter granted): median ${median.toFixed(2)} ms, min ${latencies[0].toFixed(2)} ms, ` +
        `max ${latencies[latencies.length - 1].toFixed(2)} ms over ${WAKE_UP_RUNS} runs`,
    );
  } finally {
    await holderSide.close();
    await waiterSide.close();
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
