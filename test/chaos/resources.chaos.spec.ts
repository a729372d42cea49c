import { expectScenarioToPass } from './harness/expect-scenario';
import { chaosProfileName } from './harness/profile';
import { leaksScenario } from './scenarios/leaks';
import { loadScenario } from './scenarios/load';

const TIMEOUT = 300_000;

// What close() leaves open (11) differs per client; the load scenario (12) tests the algorithm, so runs on ioredis only.
describe('chaos 11 on redis-node', () => {
  it(
    '11: thousands of cycles then close(): nothing left open, the process exits alone, the heap stays flat',
    async () => {
      expectScenarioToPass(await leaksScenario('redis-node', chaosProfileName()));
    },
    TIMEOUT,
  );
});

describe.each(['memory', 'redis', 'etcd', 'zookeeper'] as const)('chaos 11 and 12 on %s', (backend) => {
  it(
    '11: thousands of cycles then close(): nothing left open, the process exits alone, the heap stays flat',
    async () => {
      expectScenarioToPass(await leaksScenario(backend, chaosProfileName()));
    },
    TIMEOUT,
  );

  it(
    '12: 200 contenders over 1 000 Zipf-chosen keys: zero overlaps, nothing lost',
    async () => {
      expectScenarioToPass(await loadScenario(backend, chaosProfileName()));
    },
    TIMEOUT,
  );
});
