import { useContractContext } from '../contract/contract-context';
import { lossCases } from '../kinds/cases/loss.cases';
import { readWriteCases } from '../kinds/cases/read-write.cases';
import { starvationCases } from '../kinds/cases/starvation.cases';
import { startZooKeeper, TestZooKeeperServer } from '../support/zookeeper-server';
import { zookeeperFactory } from './zookeeper-contract-factory';

/**
 * The shared lock kinds suite's read/write groups on ZooKeeper. Not describeKindsContract as a whole: it
 * always runs the semaphore cases, and this backend has no semaphores (`supports.semaphore` is unset, so the
 * core refuses them). Cases left out, each covered elsewhere:
 *  - any case that takes a semaphore permit (the fencing case ends with permits; zookeeper-read-write.spec
 *    checks fencing across read, write and exclusive);
 *  - "whose holder stopped renewing": ttl liveness; an idle ZooKeeper holder keeps its node for as long as
 *    its session lives (session expiry is covered by session-liveness.cases and zookeeper-session.spec).
 * Once the kinds suite skips groups by `supports`, this file becomes `describeKindsContract(zookeeperFactory(...))`.
 */
const LEFT_OUT = [/semaphore/, /fencing tokens within each mode and across modes/, /whose holder stopped renewing/];

/** Registers a shared group without the cases in LEFT_OUT (as zookeeper.contract.spec does). */
function without(register: () => void): void {
  const sharedIt = global.it;
  global.it = ((name: string, ...rest: unknown[]) => {
    if (LEFT_OUT.some((pattern) => pattern.test(name))) return;
    return (sharedIt as (...args: unknown[]) => unknown)(name, ...rest);
  }) as typeof it;
  try {
    register();
  } finally {
    global.it = sharedIt;
  }
}
let server: TestZooKeeperServer | undefined;

beforeAll(async () => {
  server = await startZooKeeper();
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

const factory = zookeeperFactory(() => {
  if (!server) throw new Error('ZooKeeper did not start (see beforeAll)');
  return server;
});

describe(`lock kinds contract (read/write groups): ${factory.name}`, () => {
  const ctx = useContractContext(factory);

  describe('read/write locks', () => without(() => readWriteCases(ctx)));
  describe('no writer starvation', () => without(() => starvationCases(ctx)));
  describe('lost and crashed holders', () => without(() => lossCases(ctx)));
});
