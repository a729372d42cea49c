import { MemoryLockBackend } from '../../lib/backends/memory/memory-lock.backend';
import { electionContract, instanceOn } from './election-contract';

electionContract('memory', async () => {
  const backend = new MemoryLockBackend();
  return {
    ttl: 300,
    // Every instance shares the one in-process backend, as LockServices of one process would.
    instance: async () => instanceOn(backend, 300),
    close: () => backend.close(),
  };
});
