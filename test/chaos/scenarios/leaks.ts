import { get } from 'node:http';
import { isSingleRedis, type ChaosBackendKind } from '../harness/backends';
import { chaosNamespace } from '../harness/increment-run';
import { ChaosProfileName, sized } from '../harness/profile';
import { startRegister } from '../harness/register';
import { Checks, ScenarioResult } from '../harness/result';
import { withScope } from '../harness/scope';
import { ChaosTarget, startTarget } from '../harness/targets';
import { adminEtcd, adminRedis, etcdContenders, pollUntil } from '../harness/util';
import { spawnChaosWorker } from '../harness/workers';

/**
 * The stated bound: after a warm-up, the heap may grow by at most this much over the remaining cycles
 * (10 000 in the full profile: under 800 bytes a cycle), measured after forced GCs.
 */
export const HEAP_GROWTH_BOUND_BYTES = 8 * 1024 * 1024;

/**
 * 11. Leaks: thousands of acquire/release cycles in a worker process (with waits, timeouts, tryAcquire misses
 * and run() mixed in), then close(). Nothing may stay open in the process (handles, timers), the process must
 * exit on its own, the server must show no subscription, connection, lease, watcher or lock key left over,
 * and the heap must stay flat within HEAP_GROWTH_BOUND_BYTES.
 */
export async function leaksScenario(backend: ChaosBackendKind, profile: ChaosProfileName): Promise<ScenarioResult> {
  const started = performance.now();
  // etcd's cycles are ten times slower (a lease and a txn each): fewer of them in CI.
  const cycles = sized(profile, backend === 'etcd' ? 800 : 2_000, 10_000);
  return withScope(async (scope) => {
    const target = await startTarget(backend, scope);
    const register = scope.defer(await startRegister({ fenced: true }));
    const keyPrefix = chaosNamespace('leak');
    const worker = spawnChaosWorker(
      {
        id: 'leak',
        backend,
        address: target.address,
        keyPrefix,
        registerPort: register.port,
        task: { type: 'leak', cycles, ttl: 5_000 },
      },
      { exposeGc: true },
    );
    await worker.message('ready');
    worker.send({ type: 'go' });
    const { leak } = await worker.message('done', sized(profile, 240_000, 900_000));
    const report = leak!;
    const exitedAlone = await worker.exitsWithin(10_000);
    const growth = report.heapAtEnd - report.heapAfterWarmup;
    const server = await serverLeftovers(target, keyPrefix);

    const checks = new Checks();
    checks.that(
      'nothing left open in the process after close()',
      report.resourcesAfterClose.length === 0,
      report.resourcesAfterClose,
    );
    checks.that('no lock still held after close()', report.heldAfterClose === 0, report.heldAfterClose);
    checks.that('the process exited on its own after close()', exitedAlone, worker.printed);
    checks.that(
      `heap grew by at most ${HEAP_GROWTH_BOUND_BYTES / 1024 / 1024} MiB after the warm-up`,
      growth <= HEAP_GROWTH_BOUND_BYTES,
      growth,
    );
    for (const [what, count] of Object.entries(server.left))
      checks.that(`no ${what} left on the server`, count === 0, count);
    return {
      scenario: '11 leaks',
      backend,
      fault: `${cycles} acquire/release cycles, then close()`,
      figures: {
        cycles,
        'heap growth after warm-up': `${(growth / 1024).toFixed(0)} KiB (bound ${HEAP_GROWTH_BOUND_BYTES / 1024 / 1024} MiB)`,
        'per cycle': `${Math.round(((report.heapAtEnd - report.heapAfterWarmup) / cycles) * 10) / 10} B`,
        'open handles after close': report.resourcesAfterClose.length,
        'exited on its own': exitedAlone ? 'yes' : 'no',
        'server leftovers':
          Object.entries(server.left)
            .map(([what, count]) => `${what} ${count}`)
            .join(', ') || 'n/a (in-process)',
        ...(server.expiringAtClose > 0 && { 'waiter keys at close (expired on their own)': server.expiringAtClose }),
        'cycles/s': Math.round(cycles / (report.durationMs / 1000)),
      },
      checks: checks.list,
      durationMs: performance.now() - started,
    };
  });
}

interface Leftovers {
  /** What must be zero. */
  readonly left: Record<string, number>;
  /** Redis lock keys present at close that expired on their own within the waiter ttl (waiters' entries). */
  readonly expiringAtClose: number;
}

/** What the worker's connections could have left on the server after they closed. */
async function serverLeftovers(target: ChaosTarget, keyPrefix: string): Promise<Leftovers> {
  if (target.kind === 'redlock') {
    const left: Record<string, number> = {};
    let expiringAtClose = 0;
    for (const url of target.address.split(',')) {
      const one = await serverLeftovers({ ...target, kind: 'redis', address: url }, keyPrefix);
      for (const [what, count] of Object.entries(one.left)) left[what] = (left[what] ?? 0) + count;
      expiringAtClose += one.expiringAtClose;
    }
    return { left, expiringAtClose };
  }
  if (isSingleRedis(target.kind)) {
    const admin = adminRedis(target.address);
    try {
      // Closing connections is asynchronous on the server too: give it a moment to notice.
      const others = async () =>
        ((await admin.client('LIST')) as string)
          .split('\n')
          .filter((line) => line.trim() && !line.includes('cmd=client|list')).length;
      const clients = await pollUntil(
        'the worker’s connections to close',
        async () => ((await others()) === 0 ? 'closed' : undefined),
        5_000,
      ).then(() => 0, others);
      const channels = (await admin.pubsub('CHANNELS', `${keyPrefix}:*`)) as string[];
      // Fencing counters stay on purpose (they keep tokens increasing); anything else is lock state.
      const lockKeys = async () => (await admin.keys(`${keyPrefix}:*`)).filter((key) => !key.endsWith(':fence')).length;
      const atClose = await lockKeys();
      // Waiters' entries (writer intents, queue entries) expire on their own within the waiter ttl (5 s).
      const later =
        atClose === 0
          ? 0
          : await pollUntil(
              'lock keys to expire',
              async () => ((await lockKeys()) === 0 ? 'gone' : undefined),
              10_000,
            ).then(() => 0, lockKeys);
      return {
        left: { 'client connections': clients, 'pub/sub channels': channels.length, 'lock keys': later },
        expiringAtClose: atClose,
      };
    } finally {
      await admin.stop();
    }
  }
  if (target.kind === 'etcd') {
    const admin = adminEtcd(target.address);
    try {
      const leases = await pollUntil(
        'leases to be gone',
        async () => ((await admin.leaseClient.leaseLeases({})).leases.length === 0 ? 'none' : undefined),
        10_000,
      ).then(
        () => 0,
        async () => (await admin.leaseClient.leaseLeases({})).leases.length,
      );
      const keys = (await etcdContenders(admin, `${keyPrefix}/`)).length;
      const port = Number(new URL(target.address).port);
      const watchers = await metric(port, 'etcd_debugging_mvcc_watcher_total');
      const streams = await metric(port, 'etcd_debugging_mvcc_watch_stream_total');
      return { left: { leases, 'lock keys': keys, watchers, 'watch streams': streams }, expiringAtClose: 0 };
    } finally {
      await admin.stop();
    }
  }
  if (target.kind === 'zookeeper') {
    const { AdminClient } =
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      require('../../zookeeper/zookeeper-spec-helpers') as typeof import('../../zookeeper/zookeeper-spec-helpers');
    const { namespacePath } =
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      require('../../../lib/backends/zookeeper/zookeeper-node-layout') as typeof import('../../../lib/backends/zookeeper/zookeeper-node-layout');
    const admin = await AdminClient.connect(target.address);
    try {
      // Contender nodes are ephemeral: once the worker's session is closed, none may be left under any key.
      const contenders = async () => {
        const root = namespacePath(keyPrefix);
        let count = 0;
        for (const key of await admin.children(root)) count += (await admin.children(`${root}/${key}`)).length;
        return count;
      };
      const left = await pollUntil(
        'contender nodes to be gone',
        async () => ((await contenders()) === 0 ? 'none' : undefined),
        10_000,
      ).then(() => 0, contenders);
      return { left: { 'contender nodes': left }, expiringAtClose: 0 };
    } finally {
      admin.client.close();
    }
  }
  return { left: {}, expiringAtClose: 0 };
}

/** One gauge from etcd's Prometheus endpoint. */
function metric(port: number, name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => {
        const line = body.split('\n').find((entry) => entry.startsWith(`${name} `));
        resolve(line ? Number(line.split(' ')[1]) : Number.NaN);
      });
    }).once('error', reject);
  });
}
