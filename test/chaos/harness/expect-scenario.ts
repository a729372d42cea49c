import { describeResult, failures, ScenarioResult } from './result';

/** Fails the Jest test with the failed checks and the scenario's figures when any check failed. */
export function expectScenarioToPass(result: ScenarioResult): void {
  expect({ failed: failures(result), figures: describeResult(result) }).toMatchObject({ failed: [] });
}
