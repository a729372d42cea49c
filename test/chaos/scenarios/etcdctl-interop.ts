import { ChildProcess, spawn } from 'node:child_process';
import { lockPrefix } from '../../../lib/backends/etcd/etcd-key-layout';
import { EtcdLockBackend } from '../../../lib/backends/etcd/etcd-lock.backend';
import { LockService } from '../../../lib/lock.service';
import { findBinary } from '../../support/server-process';
import { chaosNamespace } from '../harness/increment-run';
import type { ChaosProfileName } from '../harness/profile';
import { Checks, ms, ScenarioResult } from '../harness/result';
import { Scope, withScope } from '../harness/scope';
import { startTarget } from '../harness/targets';
import { adminEtcd, etcdContenders, pollUntil } from '../harness/util';

/** etcdctl comes with Debian's etcd-client package (not etcd-server). */
export const ETCDCTL_INSTALL_HINT = 'apt-get install -y etcd-client';

/**
 * 13. Interop with etcd's own tools: our etcd layout is Go's concurrency.Mutex (`<name>/<lease hex>`, lowest
 * create revision owns), so `etcdctl lock <keyPrefix>/<key>` and LockService({ keyPrefix }).acquire(key)
 * exclude each other, in both directions, and queue behind each other in arrival order.
 */
export async function etcdctlInteropScenario(_profile: ChaosProfileName): Promise<ScenarioResult> {
  const started = performance.now();
  const etcdctl = etcdctlBinary();
  return withScope(async (scope) => {
    const target = await startTarget('etcd', scope);
    const admin = scope.defer(adminEtcd(target.address));
    const keyPrefix = chaosNamespace('etcdctl');
    const name = `${keyPrefix}/file:42`;
    const prefix = lockPrefix(keyPrefix, 'file:42');
    const backend = new EtcdLockBackend({ hosts: target.address });
    const locks = scope.defer(new LockService(backend, { keyPrefix }));
    const checks = new Checks();

    // etcdctl holds: we see the key as locked, wait behind it, and get it once etcdctl lets go.
    const holding = startEtcdctl(scope, etcdctl, target.address, ['lock', name]);
    const theirKey = (await holding.line((line) => line.startsWith(prefix), 20_000)).trim();
    checks.that('etcdctl’s key lies in our lock’s range', theirKey.startsWith(prefix), theirKey);
    checks.that('our isLocked sees etcdctl’s lock', await locks.isLocked('file:42'));
    checks.that(
      'our tryAcquire is refused while etcdctl holds',
      (await locks.tryAcquire('file:42', { ttl: 5_000 })) === null,
    );
    const theirRevision = (await etcdContenders(admin, prefix))[0].createRevision;
    const waiting = locks.acquire('file:42', { ttl: 5_000, waitTimeout: 20_000 });
    await pollUntil(
      'our waiter to queue behind etcdctl',
      async () => (await etcdContenders(admin, prefix)).length === 2,
      10_000,
    );
    const releasedAt = performance.now();
    holding.child.kill('SIGINT');
    const ours = await waiting;
    const handover = performance.now() - releasedAt;
    checks.that('our fencing token is above etcdctl’s key revision', ours.fencingToken > theirRevision, {
      ours: ours.fencingToken,
      theirs: theirRevision,
    });
    const exit = await holding.exited;
    checks.that('etcdctl lock exited cleanly on SIGINT', exit.code === 0 || exit.signal === 'SIGINT', exit);

    // We hold: etcdctl waits behind us and runs its command only after our release.
    const queued = startEtcdctl(scope, etcdctl, target.address, ['lock', name, 'date', '+%s%N']);
    await pollUntil(
      'etcdctl to queue behind us',
      async () => (await etcdContenders(admin, prefix)).length === 2,
      10_000,
    );
    const releaseWallNs = BigInt(Date.now()) * 1_000_000n;
    await ours.release();
    const ranAt = BigInt((await queued.line((line) => /^\d{18,}$/.test(line.trim()), 20_000)).trim());
    checks.that('etcdctl ran its command only after our release', ranAt >= releaseWallNs, {
      ranAt: ranAt.toString(),
      releasedAt: releaseWallNs.toString(),
    });
    const queuedExit = await queued.exited;
    checks.that('etcdctl lock with a command exited 0', queuedExit.code === 0, queuedExit);
    checks.that('nothing is left in the lock’s range', (await etcdContenders(admin, prefix)).length === 0);

    return {
      scenario: '13 etcdctl interop',
      backend: 'etcd',
      fault: '`etcdctl lock` and LockService on the same name',
      figures: {
        'etcdctl key': theirKey.slice(keyPrefix.length),
        'handover etcdctl -> ours': ms(handover),
        'ours -> etcdctl command ran after release': `${(Number(ranAt - releaseWallNs) / 1e6) | 0} ms`,
      },
      checks: checks.list,
      durationMs: performance.now() - started,
    };
  });
}

export function etcdctlBinary(): string {
  try {
    return findBinary('etcdctl');
  } catch {
    throw new Error(`etcdctl is not on PATH. The interop scenario runs etcd's own client: ${ETCDCTL_INSTALL_HINT}`);
  }
}

interface Etcdctl {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first output line matching `test`. */
  line(test: (line: string) => boolean, timeoutMs: number): Promise<string>;
}

function startEtcdctl(scope: Scope, binary: string, endpoint: string, args: string[]): Etcdctl {
  const child = spawn(binary, [`--endpoints=${endpoint}`, ...args], {
    env: { ...process.env, ETCDCTL_API: '3' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const listeners = new Set<() => void>();
  let pending = '';
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4_000);
    pending += chunk.toString();
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    lines.push(...parts);
    for (const listener of [...listeners]) listener();
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  scope.onClose(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return {
    child,
    exited,
    line: (test, timeoutMs) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => done(new Error(`etcdctl ${args.join(' ')} printed no such line within ${timeoutMs} ms:\n${output}`)),
          timeoutMs,
        );
        const done = (error?: Error, line?: string) => {
          clearTimeout(timer);
          listeners.delete(check);
          if (error) reject(error);
          else resolve(line!);
        };
        const check = () => {
          const found = lines.find(test);
          if (found !== undefined) done(undefined, found);
        };
        listeners.add(check);
        check();
      }),
  };
}
