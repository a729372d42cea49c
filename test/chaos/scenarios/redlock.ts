import { LockService } from '../../../lib/lock.service';
import { connectChaosBackend } from '../harness/backends';
import { chaosNamespace } from '../harness/increment-run';
import { ChaosProfileName, sized } from '../harness/profile';
import { Checks, ms, percentile, ScenarioResult } from '../harness/result';
import { withScope } from '../harness/scope';
import { startTarget } from '../harness/targets';
import { adminRedis } from '../harness/util';

const TTL = 2_000;

/**
 * 9. Redlock over 3 independent Redis masters, each behind its own fault proxy.
 *  - all up, one master killed, one black-holed: locks are still granted (a majority answers); p50/p99 of acquire;
 *  - a majority down (two killed): acquire fails with LockQuorumError (a LockBackendError naming the instances),
 *    within waitTimeout plus a margin, and no lock key is left behind on the surviving master.
 */
export async function redlockScenario(profile: ChaosProfileName): Promise<ScenarioResult> {
  const started = performance.now();
  const cycles = sized(profile, 30, 300);
  return withScope(async (scope) => {
    const target = await startTarget('redlock', scope);
    const masters = target.masters!;
    const { address, proxies } = await target.proxied(scope);
    const connection = connectChaosBackend('redlock', address);
    const keyPrefix = chaosNamespace('redlock');
    const locks = new LockService(connection.backend, { keyPrefix, operationTimeout: 5_000 });
    scope.onClose(async () => {
      for (const proxy of proxies) proxy.pass();
      await locks.close();
      await connection.close();
    });
    const checks = new Checks();

    const measure = async (label: string) => {
      const waits: number[] = [];
      let failures = 0;
      for (let cycle = 0; cycle < cycles; cycle++) {
        const t0 = performance.now();
        try {
          const lock = await locks.acquire(`k${cycle % 10}`, { ttl: TTL, waitTimeout: 5_000 });
          waits.push(performance.now() - t0);
          await lock.release();
        } catch {
          failures += 1;
        }
      }
      checks.that(`${label}: every lock granted`, failures === 0, failures);
      return `p50 ${ms(percentile(waits, 50))}, p99 ${ms(percentile(waits, 99))}`;
    };

    const allUp = await measure('all 3 up');
    await masters[2].kill('SIGKILL');
    const oneDown = await measure('1 of 3 down');
    await masters[2].restart();
    proxies[1].blackhole();
    const oneBlackholed = await measure('1 of 3 black-holed');
    proxies[1].pass();

    await Promise.all([masters[0].kill('SIGKILL'), masters[1].kill('SIGKILL')]);
    const waitTimeout = 2_000;
    const t0 = performance.now();
    const failure = await locks.acquire('majority-down', { ttl: TTL, waitTimeout }).then(
      (lock) => {
        void lock.release();
        return new Error('granted without a majority');
      },
      (error: Error) => error,
    );
    const failedAfter = performance.now() - t0;
    checks.that(
      'a majority down: acquire fails with LockQuorumError within waitTimeout + 5 s',
      failure.name === 'LockQuorumError' && failedAfter < waitTimeout + 5_000,
      {
        error: `${failure.name}: ${failure.message}`,
        failedAfter,
      },
    );
    const survivor = adminRedis(masters[2].url);
    const stray = (await survivor.keys(`${keyPrefix}:*`)).filter((key) => !key.endsWith(':fence'));
    await survivor.stop();
    checks.that('no stray lock keys on the surviving master', stray.length === 0, stray);
    return {
      scenario: '9 redlock quorum',
      backend: 'redlock x3',
      fault: 'one master killed / black-holed; then two killed',
      figures: {
        'all up': allUp,
        '1 killed': oneDown,
        '1 black-holed': oneBlackholed,
        'majority down': `${failure.name} after ${ms(failedAfter)}`,
        'stray keys': stray.length,
      },
      checks: checks.list,
      durationMs: performance.now() - started,
    };
  });
}
