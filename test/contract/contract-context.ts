import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LockBackend } from '../../lib/backends/lock-backend.interface';
import { LockServiceOptions } from '../../lib/lock-options';
import { LockService } from '../../lib/lock.service';
import { BackendFactory, BackendUnderTest, BackendWorld, uniqueNamespace } from '../support/backends';
import { within } from '../support/time';
import { killAllWorkers } from '../support/worker';

/** Per-test resources of the contract suite; everything created through it is closed after the test. */
export interface ContractContext {
  readonly factory: BackendFactory;
  /** The shortest ttl this backend's cases use (etcd leases are whole seconds). */
  readonly ttl: number;
  /** This test's keyPrefix; no other test uses it. */
  readonly ns: string;
  /** A LockService on a new connection (or over `backend`), keyPrefix `ns` unless given. */
  service(options?: LockServiceOptions & { backend?: LockBackend }): LockService;
  /** A raw backend on a new connection of this test's world. */
  connect(): BackendUnderTest;
  /** Registers something to close after the test (before the world's connections). */
  defer(close: () => unknown): void;
  /** A temp dir removed after the test. */
  tempDir(): string;
}

const CLEANUP_TIMEOUT_MS = 15_000;

export function useContractContext(factory: BackendFactory): ContractContext {
  let world: BackendWorld | undefined;
  let ns = '';
  let cleanups: (() => unknown)[] = [];

  beforeEach(() => {
    world = factory.world();
    ns = uniqueNamespace(`${factory.name}-${expect.getState().currentTestName ?? 'test'}`.slice(0, 40));
    cleanups = [];
  });

  afterEach(async () => {
    await killAllWorkers();
    // Services first (they release their locks), then the connections under them. Newest first.
    for (const close of cleanups.reverse()) {
      await within(Promise.resolve().then(close), CLEANUP_TIMEOUT_MS, 'closing a test resource').catch((error) => {
        throw new Error(`cleanup failed: ${String(error)}`);
      });
    }
    await within(world!.close(), CLEANUP_TIMEOUT_MS, 'closing the backend connections');
    world = undefined;
  });

  const ctx: ContractContext = {
    factory,
    ttl: factory.minTtl,
    get ns() {
      return ns;
    },
    service(options = {}) {
      const { backend, ...serviceOptions } = options;
      const locks = new LockService(backend ?? ctx.connect().backend, { keyPrefix: ns, ...serviceOptions });
      cleanups.push(() => locks.close());
      return locks;
    },
    connect() {
      if (!world) throw new Error('connect() is only available inside a test');
      return world.connect();
    },
    defer(close) {
      cleanups.push(close);
    },
    tempDir() {
      const dir = mkdtempSync(join(tmpdir(), 'ndl-contract-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      return dir;
    },
  };
  return ctx;
}
