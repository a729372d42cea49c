import { expectScenarioToPass } from './harness/expect-scenario';
import { chaosProfileName } from './harness/profile';
import { pausesScenario } from './scenarios/pauses';
import { starvationScenario } from './scenarios/starvation';

const TIMEOUT = 240_000;

describe.each(['redis', 'etcd', 'zookeeper'] as const)('chaos 2: process pauses on %s', (backend) => {
  it(
    'a holder SIGSTOPped past its ttl mid read-modify-write: its write is fenced, nothing lost, its signal fires on resume',
    async () => {
      expectScenarioToPass(await pausesScenario(backend, chaosProfileName(), { fenced: true }));
    },
    TIMEOUT,
  );
});

// The control run proves the checker sees a violation. CI runs it on one backend; `npm run chaos` on both.
describe('chaos 2, control: the same pauses without fencing', () => {
  it(
    'lose acknowledged updates, and the checker reports it',
    async () => {
      expectScenarioToPass(await pausesScenario('redis', chaosProfileName(), { fenced: false }));
    },
    TIMEOUT,
  );
});

describe.each(['memory', 'redis', 'etcd', 'zookeeper'] as const)('chaos 3: event-loop starvation on %s', (backend) => {
  it(
    'a holder that blocks its loop past the ttl is told its lock is lost on resume, and its write does no harm',
    async () => {
      expectScenarioToPass(await starvationScenario(backend, chaosProfileName()));
    },
    TIMEOUT,
  );
});
