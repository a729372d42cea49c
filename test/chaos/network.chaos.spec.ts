import { expectScenarioToPass } from './harness/expect-scenario';
import { chaosProfileName } from './harness/profile';
import { networkScenario } from './scenarios/network';

// redis-node: the same faults through node-redis, whose offline queue the deadlines must bound as with ioredis.
describe.each(['redis', 'redis-node', 'etcd'] as const)(
  'chaos 5: network faults between one client and %s',
  (backend) => {
    it('black-holed holder: lost by the end of its validity, fenced, no silent re-acquire; delayed replies: no expired lock', async () => {
      expectScenarioToPass(await networkScenario(backend, chaosProfileName()));
    }, 240_000);
  },
);
