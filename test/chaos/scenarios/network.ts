import { LockBackendError, LockTimeoutError } from '../../../lib/errors';
import type { LockHandle } from '../../../lib/lock-handle';
import { LockService } from '../../../lib/lock.service';
import { connectChaosBackend, isSingleRedis, type ChaosBackendKind } from '../harness/backends';
import { hrNow, msBetween } from '../harness/hrtime';
import { chaosNamespace } from '../harness/increment-run';
import { ChaosProfileName, sized } from '../harness/profile';
import { startRegister } from '../harness/register';
import { Checks, ms, ScenarioResult } from '../harness/result';
import { Scope, withScope } from '../harness/scope';
import { ChaosTarget, startTarget } from '../harness/targets';
import { pollUntil, sleep } from '../harness/util';
import { spawnChaosWorker } from '../harness/workers';

const TTL = 2_000;

/**
 * 5. Network faults between one client and the server, through a fault proxy only that client uses.
 *  a) The holder is black-holed for 2 x ttl (its packets vanish, its connection stays open). Its lock must be
 *     reported lost by the end of the validity the library promised, another process takes the lock, the cut-off
 *     holder's late write is refused by fencing, and after the network heals (its held-back requests arrive)
 *     it must not silently hold the lock again.
 *  b) Replies are delayed past the ttl: acquire fails with a typed error and never returns a lock whose
 *     validity already passed; with replies delayed so that a grant's round trips fit in the ttl, the lock
 *     it returns is still valid.
 */
export async function networkScenario(backend: ChaosBackendKind, profile: ChaosProfileName): Promise<ScenarioResult> {
  const started = performance.now();
  const margin = sized(profile, 1_000, 500);
  return withScope(async (scope) => {
    const target = await startTarget(backend, scope);
    if (!target.crossProcess) throw new Error(`${backend} has no network to cut`);
    const checks = new Checks();
    const blackhole = await blackholedHolder(scope, target, checks, margin);
    const delayed = await delayedReplies(scope, target, checks);
    return {
      scenario: '5 network faults',
      backend,
      fault: 'holder black-holed 2 x ttl (ttl 2 s); replies delayed past the ttl, and within it',
      figures: {
        'lost reported vs promised validity': `${blackhole.lostVsValidity >= 0 ? '+' : ''}${ms(blackhole.lostVsValidity)}`,
        'other process granted after cut': ms(blackhole.takeover),
        'cut-off write': blackhole.zombieWrite,
        'held again after heal': blackhole.heldAgain ? 'yes' : 'no',
        'acquire, replies +2.5 s': delayed.slowOutcome,
        'acquire, replies delayed within ttl': delayed.fastOutcome,
      },
      checks: checks.list,
      durationMs: performance.now() - started,
    };
  });
}

async function blackholedHolder(scope: Scope, target: ChaosTarget, checks: Checks, margin: number) {
  const register = scope.defer(await startRegister({ fenced: true }));
  const keyPrefix = chaosNamespace('blackhole');
  const { address: cutAddress, proxies } = await target.proxied(scope);
  const base = { backend: target.kind, keyPrefix, registerPort: register.port };
  const task = { type: 'hold' as const, key: 'cut', ttl: TTL, waitTimeout: 30_000, readOnGrant: true };
  const holder = spawnChaosWorker({ ...base, id: 'holder', address: cutAddress, task });
  const waiter = spawnChaosWorker({ ...base, id: 'waiter', address: target.address, task });
  await Promise.all([holder.message('ready'), waiter.message('ready')]);
  holder.send({ type: 'go' });
  const held = await holder.message('held');
  waiter.send({ type: 'go' });

  const cutAt = hrNow();
  for (const proxy of proxies) proxy.blackhole();
  const lost = await holder.message('lost', 20_000);
  const lostVsValidity = msBetween(lost.validUntil, lost.at);
  checks.that(
    `the cut-off holder was told its lock was lost by the end of its validity (+${margin} ms)`,
    lostVsValidity <= margin,
    {
      lostVsValidity,
      reason: lost.reason,
    },
  );
  const next = await waiter.message('held', 30_000);
  const takeover = msBetween(cutAt, next.acquiredAt);
  checks.that(
    'another process was granted the lock after the cut-off holder’s validity',
    BigInt(next.acquiredAt) > BigInt(lost.validUntil),
    {
      takeover,
    },
  );
  checks.that('with a higher fencing token', BigInt(next.token) > BigInt(held.token));

  await sleep(Math.max(0, 2 * TTL - msBetween(cutAt, hrNow())));
  holder.send({ type: 'write' });
  const wrote = await holder.message('wrote');
  checks.that('the cut-off holder’s late write was refused by fencing', !wrote.ok);

  for (const proxy of proxies) proxy.pass();
  waiter.send({ type: 'release' });
  await waiter.message('released');
  // The held-back requests (renewals, keepalives) now reach the server: none may bring the old lock back.
  const observer = connectChaosBackend(target.kind, target.address);
  const locks = new LockService(observer.backend, { keyPrefix });
  let heldAgain = false;
  try {
    for (let probe = 0; probe < 10; probe++) {
      if (await locks.isLocked('cut')) heldAgain = true;
      await sleep(200);
    }
  } finally {
    await locks.close();
    await observer.close();
  }
  checks.that('after the network healed, nobody holds the lock (no silent re-acquire)', !heldAgain);
  holder.send({ type: 'release' });
  const released = await holder.message('released');
  checks.that('releasing the lost lock is quiet', released.error === undefined, released.error);
  holder.send({ type: 'exit' });
  waiter.send({ type: 'exit' });
  await Promise.all([holder.message('done'), waiter.message('done')]);
  return { lostVsValidity, takeover, zombieWrite: wrote.ok ? 'accepted' : 'fenced', heldAgain };
}

async function delayedReplies(scope: Scope, target: ChaosTarget, checks: Checks) {
  const { address, proxies } = await target.proxied(scope);
  const connection = connectChaosBackend(target.kind, address);
  const keyPrefix = chaosNamespace('delay');
  const locks = new LockService(connection.backend, { keyPrefix, operationTimeout: 10_000 });
  scope.onClose(async () => {
    for (const proxy of proxies) proxy.pass();
    await locks.close();
    await connection.close();
  });
  // Connected before the delay starts, so the delay applies to lock requests, not the handshake.
  await locks.isLocked('slow');

  for (const proxy of proxies) proxy.delay(TTL + 500, 'replies');
  const slowStart = performance.now();
  const slow = await locks.acquire('slow', { ttl: TTL, waitTimeout: 3 * TTL }).then(
    (lock: LockHandle) => ({ lock, remaining: lock.expiresAt - Date.now() }),
    (error: Error) => ({ error }),
  );
  const slowMs = performance.now() - slowStart;
  const slowOutcome =
    'error' in slow ? `${slow.error.name} after ${ms(slowMs)}` : `granted, ${ms(slow.remaining)} left`;
  checks.that(
    'with replies delayed past the ttl, acquire fails with a typed error and returns no lock',
    'error' in slow && (slow.error instanceof LockBackendError || slow.error instanceof LockTimeoutError),
    slowOutcome,
  );
  if ('lock' in slow) await slow.lock.release().catch(() => undefined);
  const tried = await locks.tryAcquire('slow', { ttl: TTL }).then(
    (lock) => (lock ? `granted, ${ms(lock.expiresAt - Date.now())} left` : 'null'),
    (error: Error) => error.name,
  );
  checks.that('tryAcquire returns no lock either', !tried.startsWith('granted'), tried);

  // The slow phase's last replies (its clean-up, late grants given back) are still on their way, each delayed past
  // the ttl. The proxy forwards in order, so the next phase's replies would queue behind them and arrive later than
  // its delay says (past Redlock's requestTimeout). Stop delaying, let them through, then start the next phase.
  const slowPassed = proxies.map((proxy) => proxy.passedSoFar());
  for (const proxy of proxies) proxy.pass();
  await pollUntil('the slow replies to be delivered', () => slowPassed.every((passed) => passed()), 3 * TTL);
  for (const proxy of proxies) proxy.delay(fastDelay(target), 'replies');
  const fast = await locks.acquire('fast', { ttl: TTL, waitTimeout: 3 * TTL }).then(
    (lock: LockHandle) => ({ lock, remaining: lock.expiresAt - Date.now() }),
    (error: Error) => ({ error }),
  );
  const fastOutcome = `${'error' in fast ? fast.error.name : `granted, ${ms(fast.remaining)} validity left`} (replies +${ms(fastDelay(target))})`;
  checks.that(
    'with replies delayed by less than the ttl, the lock returned is still valid',
    'lock' in fast && fast.remaining > 0,
    'error' in fast ? `${fastOutcome}: ${fast.error.message}` : fastOutcome,
  );
  for (const proxy of proxies) proxy.pass();
  if ('lock' in fast) await fast.lock.release().catch(() => undefined);

  // Grants that arrived too late were handed back (or expire): nothing stays locked.
  const freed = await pollUntil(
    'the late grants to be released',
    async () => !(await locks.isLocked('slow')),
    3 * TTL,
  ).then(
    () => true,
    () => false,
  );
  checks.that('late grants were given back: the key ends up free', freed);
  return { slowOutcome, fastOutcome };
}

/**
 * Reply delay that leaves a grant some validity: Redis grants in one round trip, etcd in two; Redlock counts an
 * instance as failed once it takes longer than its requestTimeout (default 1 s, at most half the ttl).
 */
function fastDelay(target: ChaosTarget): number {
  return Math.round(TTL * (isSingleRedis(target.kind) ? 0.6 : target.kind === 'redlock' ? 0.3 : 0.2));
}
