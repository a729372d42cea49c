import { fencingCases } from './cases/fencing.cases';
import { isolationCases } from './cases/isolation.cases';
import { lockDelayCases } from './cases/lock-delay.cases';
import { mutualExclusionCases } from './cases/mutual-exclusion.cases';
import { ownershipCases } from './cases/ownership.cases';
import { unreachableCases } from './cases/unreachable.cases';
import { validationCases } from './cases/validation.cases';
import { waitingCases } from './cases/waiting.cases';
import { watchdogCases } from './cases/watchdog.cases';
import { useContractContext } from './contract-context';
import { startZooKeeper, TestZooKeeperServer } from '../support/zookeeper-server';
import { killAllLineProcesses } from '../support/line-process';
import { sessionCrashCases, sessionLifecycleCases, sessionOwnershipCases } from '../zookeeper/session-liveness.cases';
import { zookeeperFactory } from '../zookeeper/zookeeper-contract-factory';

/**
 * The shared contract suite on ZooKeeper (one server for this file). It runs every shared case group as is,
 * except three whose shared form assumes ttl liveness or a worker that connects through connectBackend:
 *  - ownership's "after the holder expired ...": an idle ZooKeeper holder never expires (its client keeps the
 *    session alive); the session variant cuts the holder's network until its session expires;
 *  - crashed holder: with crossProcess false the shared case abandons a lock in-process, which ZooKeeper keeps
 *    for as long as that connection lives; the session variant SIGKILLs a holder process instead;
 *  - resources (lifecycle): the same checks in a process of this folder's own.
 * Once BackendFactory can say that a backend's liveness is its session (and connectBackend knows
 * 'zookeeper'), this file becomes `describeLockContract(zookeeperFactory(...))` like the others.
 */
let server: TestZooKeeperServer | undefined;

beforeAll(async () => {
  server = await startZooKeeper();
}, 60_000);

afterAll(async () => {
  await killAllLineProcesses();
  await server?.stop();
});

const zookeeper = () => {
  if (!server) throw new Error('ZooKeeper did not start (see beforeAll)');
  return server;
};
const factory = zookeeperFactory(zookeeper);

/** Cases of a shared group that do not apply here; each has a session-based stand-in registered next to it. */
const TTL_LIVENESS_CASES = ['after the holder expired'];

function withoutTtlLivenessCases(register: () => void): void {
  const sharedIt = global.it;
  global.it = ((name: string, ...rest: unknown[]) => {
    if (TTL_LIVENESS_CASES.some((prefix) => name.startsWith(prefix))) return;
    return (sharedIt as (...args: unknown[]) => unknown)(name, ...rest);
  }) as typeof it;
  try {
    register();
  } finally {
    global.it = sharedIt;
  }
}

describe(`LockBackend contract: ${factory.name}`, () => {
  const ctx = useContractContext(factory);

  describe('mutual exclusion', () => mutualExclusionCases(ctx));
  describe('fencing tokens', () => fencingCases(ctx));
  describe('ownership', () => {
    withoutTtlLivenessCases(() => ownershipCases(ctx));
    sessionOwnershipCases(ctx, zookeeper);
  });
  describe('crashed holder', () => sessionCrashCases(ctx, zookeeper));
  describe('watchdog', () => watchdogCases(ctx));
  describe('waiting', () => waitingCases(ctx));
  describe('input validation', () => validationCases(ctx));
  describe('unreachable server', () => unreachableCases(ctx));
  describe('key isolation', () => isolationCases(ctx));
  describe('lock-delay', () => lockDelayCases(ctx));
  describe('resources', () => sessionLifecycleCases(ctx, zookeeper));
});
