import type { BackendFactory } from '../support/backends';
import { crashCases } from './cases/crash.cases';
import { fencingCases } from './cases/fencing.cases';
import { isolationCases } from './cases/isolation.cases';
import { lifecycleCases } from './cases/lifecycle.cases';
import { lockDelayCases } from './cases/lock-delay.cases';
import { mutualExclusionCases } from './cases/mutual-exclusion.cases';
import { ownershipCases } from './cases/ownership.cases';
import { unreachableCases } from './cases/unreachable.cases';
import { validationCases } from './cases/validation.cases';
import { waitingCases } from './cases/waiting.cases';
import { watchdogCases } from './cases/watchdog.cases';
import { useContractContext } from './contract-context';

/**
 * The promises every LockBackend keeps (lib/backends/lock-backend.interface.ts), checked through the public
 * LockService API against a real server. Each <backend>.contract.spec.ts runs this one suite.
 */
export function describeLockContract(factory: BackendFactory): void {
  describe(`LockBackend contract: ${factory.name}`, () => {
    const ctx = useContractContext(factory);

    describe('mutual exclusion', () => mutualExclusionCases(ctx));
    describe('fencing tokens', () => fencingCases(ctx));
    describe('ownership', () => ownershipCases(ctx));
    describe('crashed holder', () => crashCases(ctx));
    describe('watchdog', () => watchdogCases(ctx));
    describe('waiting', () => waitingCases(ctx));
    describe('input validation', () => validationCases(ctx));
    if (factory.hasServer) describe('unreachable server', () => unreachableCases(ctx));
    describe('key isolation', () => isolationCases(ctx));
    describe('lock-delay', () => lockDelayCases(ctx));
    describe('resources', () => lifecycleCases(ctx));
  });
}
