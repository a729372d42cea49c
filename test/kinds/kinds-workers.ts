import { join } from 'node:path';
import { ForkedWorker } from '../support/worker';
import { KINDS_WORKER_ENV, KindsParentMessage, KindsWorkerConfig, KindsWorkerMessage } from './kinds-worker-protocol';

const WORKER_SCRIPT = join(__dirname, 'kinds-worker.ts');

/** Forks test/kinds/kinds-worker.ts; killAllWorkers() (test/support/worker.ts) reaps it. */
export function spawnKindsWorker(config: KindsWorkerConfig): ForkedWorker<KindsParentMessage, KindsWorkerMessage> {
  return ForkedWorker.fork(WORKER_SCRIPT, {
    label: `kinds worker ${config.worker}`,
    config: { env: KINDS_WORKER_ENV, value: config },
  });
}
