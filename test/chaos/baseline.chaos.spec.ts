import { expectScenarioToPass } from './harness/expect-scenario';
import { chaosProfileName } from './harness/profile';
import { baselineScenario } from './scenarios/baseline';

describe.each(['memory', 'redis', 'etcd', 'zookeeper'] as const)('chaos 1: baseline on %s', (backend) => {
  it('N worker processes x M increments: exact count, no overlap, tokens increase in grant order', async () => {
    expectScenarioToPass(await baselineScenario(backend, chaosProfileName()));
  }, 300_000);
});
