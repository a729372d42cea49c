import { expectScenarioToPass } from './harness/expect-scenario';
import { chaosProfileName } from './harness/profile';
import { redlockScenario } from './scenarios/redlock';

describe('chaos 9: Redlock over 3 masters', () => {
  it('grants with one master down or black-holed; a majority down fails with LockQuorumError and leaves no stray key', async () => {
    expectScenarioToPass(await redlockScenario(chaosProfileName()));
  }, 240_000);
});
