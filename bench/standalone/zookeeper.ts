/**
 * The wake-up latency on a local ZooKeeper 3.8 (not a test; prints it): from a holder's release to the next
 * waiter's grant, each on its own connection. The uncontended cycle against raw node-zookeeper-client calls is
 * scenario 1 of `npm run bench`.
 * Run: node --require ./test/support/ts-register.js bench/standalone/zookeeper.ts [--fsync]
 * With --fsync the server fsyncs its log on every write, as in production (and as the etcd figures do).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper-lock.backend';
import { startZooKeeper } from '../../test/support/zookeeper-server';

const WAKE_UP_RUNS = 20;

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
