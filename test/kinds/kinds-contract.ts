import type { BackendFactory } from '../support/backends';
import { useContractContext } from '../contract/contract-context';
import { lossCases } from './cases/loss.cases';
import { readWriteCases } from './cases/read-write.cases';
import { semaphoreCases } from './cases/semaphore.cases';
import { starvationCases } from './cases/starvation.cases';
import { killAllWorkers } from '../support/worker';

/**
 * The promises every backend with `supports.readWrite` and `supports.semaphore` keeps for those lock kinds
 * (lib/lock-options.ts), checked through the public LockService API against a real server. Each
 * test/kinds/<backend>.kinds.spec.ts runs this one suite.
 */
export function describeKindsContract(factory: BackendFactory): void {
  describe(`lock kinds contract: ${factory.name}`, () => {
    const ctx = useContractContext(factory);
    afterEach(() => killAllWorkers());

    describe('read/write locks', () => readWriteCases(ctx));
    describe('no writer starvation', () => starvationCases(ctx));
    describe('lost and crashed holders', () => lossCases(ctx));
    describe('semaphores', () => semaphoreCases(ctx));
  });
}
