import { expectScenarioToPass } from './harness/expect-scenario';
import { chaosProfileName } from './harness/profile';
import { holderKilledScenario } from './scenarios/holder-killed';
import { redisRestartScenario } from './scenarios/redis-restart';

const TIMEOUT = 240_000;

// Both clients: reconnecting after a crash and the NOSCRIPT fallback are client behaviour.
describe.each(['redis', 'redis-node'] as const)(
  'chaos 4: a single Redis crashes and restarts empty, twice, then SCRIPT FLUSH (%s)',
  (backend) => {
    it(
      'no double grant goes unfenced, nothing is lost, and NOSCRIPT costs at most one retry',
      async () => {
        expectScenarioToPass(await redisRestartScenario(chaosProfileName(), backend));
      },
      TIMEOUT,
    );
  },
);

// Memory locks live in the process that holds them: the contract suite covers an abandoned in-process lock.
describe.each(['redis', 'etcd', 'zookeeper'] as const)('chaos 10: holder SIGKILLed on %s', (backend) => {
  it(
    'the next waiter gets the lock within the ttl plus a margin, with a higher token',
    async () => {
      expectScenarioToPass(await holderKilledScenario(backend, chaosProfileName()));
    },
    TIMEOUT,
  );
});
