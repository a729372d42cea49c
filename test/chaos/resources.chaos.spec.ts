import { expectScenarioToPass } from './harness/expect-scenario';
import { chaosProfileName } from './harness/profile';
import { leaksScenario } from './scenarios/leaks';
import { loadScenario } from './scenarios/load';

const TIMEOUT = 300_000;

// redis-node's close() is covered by the contract suite ("after close() nothing stays open"); `npm run chaos` also
// runs 11 on it (scenarios/catalog.ts). 12 tests the algorithm under load: one client is enough.
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
