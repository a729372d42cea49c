import { join } from 'node:path';
import { ForkedWorker } from '../support/worker';
import { ParentMessage, WORKER_CONFIG_ENV, WorkerConfig, WorkerMessage } from './worker-protocol';

const WORKER_SCRIPT = join(__dirname, 'lock-worker.ts');

/** A forked lock worker as the parent test sees it. */
export type WorkerProcess = ForkedWorker<ParentMessage, WorkerMessage>;

/** Forks test/workers/lock-worker.ts (see worker-protocol.ts for its modes). */
export function spawnWorker(config: WorkerConfig): WorkerProcess {
  return ForkedWorker.fork(WORKER_SCRIPT, {
    label: `worker ${config.worker}`,
    config: { env: WORKER_CONFIG_ENV, value: config },
  });
}
