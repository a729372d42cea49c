import type { ChaosBackendKind } from '../harness/backends';
import { hrNow, msBetween } from '../harness/hrtime';
import { chaosNamespace } from '../harness/increment-run';
import { ChaosProfileName, sized } from '../harness/profile';
import { startRegister } from '../harness/register';
import { Checks, maxOf, ms, percentile, ScenarioResult } from '../harness/result';
import { Scope, withScope } from '../harness/scope';
import { ChaosTarget, startTarget } from '../harness/targets';
import { spawnChaosWorker } from '../harness/workers';

const TTL = 3_000;

/**
 * 10. A holder process is SIGKILLed: no release, no cleanup. A waiter in another process must get the lock
 * within the ttl plus a small margin (the holder's last renewal left it at most a ttl), with a higher token.
 */
export async function holderKilledScenario(
  backend: ChaosBackendKind,
  profile: ChaosProfileName,
): Promise<ScenarioResult> {
  const started = performance.now();
  const rounds = sized(profile, 2, 5);
  const margin = sized(profile, 4_000, 2_000);
  return withScope(async (scope) => {
    const target = await startTarget(backend, scope);
    if (!target.crossProcess)
      throw new Error(`${backend} locks live in one process: a killed holder takes them all with it`);
    const takeovers: number[] = [];
    const tokensIncrease: boolean[] = [];
    for (let round = 0; round < rounds; round++) {
      const { takeover, increased } = await killOneHolder(scope, target);
      takeovers.push(takeover);
      tokensIncrease.push(increased);
    }
    const checks = new Checks();
    checks.that(
      `the next waiter got the lock within ttl + ${margin} ms every time`,
      takeovers.every((value) => value <= TTL + margin),
      takeovers,
    );
    checks.that('its fencing token was higher', tokensIncrease.every(Boolean), tokensIncrease);
    return {
      scenario: '10 holder SIGKILLed',
      backend,
      fault: `SIGKILL the holder (ttl ${TTL / 1000} s) x ${rounds}`,
      figures: {
        'takeover after kill p50': ms(percentile(takeovers, 50)),
        'takeover after kill max': ms(maxOf(takeovers)),
        bound: `ttl + ${margin} ms`,
      },
      checks: checks.list,
      durationMs: performance.now() - started,
    };
  });
}

async function killOneHolder(scope: Scope, target: ChaosTarget): Promise<{ takeover: number; increased: boolean }> {
  const register = scope.defer(await startRegister({ fenced: true }));
  const keyPrefix = chaosNamespace('kill');
  const base = { backend: target.kind, address: target.address, keyPrefix, registerPort: register.port };
  const holder = spawnChaosWorker({
    ...base,
    id: 'holder',
    task: { type: 'hold', key: 'victim', ttl: TTL, waitTimeout: 30_000 },
  });
  await holder.message('ready');
  holder.send({ type: 'go' });
  const held = await holder.message('held');
  const waiter = spawnChaosWorker({
    ...base,
    id: 'waiter',
    task: { type: 'hold', key: 'victim', ttl: TTL, waitTimeout: 60_000 },
  });
  await waiter.message('ready');
  waiter.send({ type: 'go' });
  const killedAt = hrNow();
  await holder.kill('SIGKILL');
  const next = await waiter.message('held', 60_000);
  waiter.send({ type: 'release' });
  await waiter.message('released');
  waiter.send({ type: 'exit' });
  await waiter.message('done');
  return { takeover: msBetween(killedAt, next.acquiredAt), increased: BigInt(next.token) > BigInt(held.token) };
}
