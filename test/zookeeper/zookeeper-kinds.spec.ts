import { useContractContext } from '../contract/contract-context';
import { lossCases } from '../kinds/cases/loss.cases';
import { readWriteCases } from '../kinds/cases/read-write.cases';
import { semaphoreCases } from '../kinds/cases/semaphore.cases';
import { starvationCases } from '../kinds/cases/starvation.cases';
import { startZooKeeper, TestZooKeeperServer } from '../support/zookeeper-server';
import { zookeeperFactory } from './zookeeper-contract-factory';

/**
 * The shared lock kinds suite on ZooKeeper, every group. One case is left out: "whose holder stopped
 * renewing" is ttl liveness, and an idle ZooKeeper holder keeps its node for as long as its session lives
 * (session expiry is covered by session-liveness.cases and zookeeper-session.spec). The factory is not
 * cross-process (see zookeeper-contract-factory), so the semaphore's contenders share one process.
 */
const LEFT_OUT = [/whose holder stopped renewing/];

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

describe(`lock kinds contract: ${factory.name}`, () => {
  const ctx = useContractContext(factory);

  describe('read/write locks', () => without(() => readWriteCases(ctx)));
  describe('no writer starvation', () => without(() => starvationCases(ctx)));
  describe('lost and crashed holders', () => without(() => lossCases(ctx)));
  describe('semaphores', () => without(() => semaphoreCases(ctx)));
});
