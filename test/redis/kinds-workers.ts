import { join } from 'node:path';
import { ForkedWorker } from '../support/worker';
import {
  KINDS_WORKER_ENV,
  type KindsParentMessage,
  type KindsWorkerConfig,
  type KindsWorkerMessage,
} from './kinds-worker-protocol';

const SCRIPT = join(__dirname, 'kinds-worker.ts');

/** Forks test/redis/kinds-worker.ts; killAllWorkers() (test/support/worker.ts) reaps it. */
export function forkKindsWorker(config: KindsWorkerConfig): ForkedWorker<KindsParentMessage, KindsWorkerMessage> {
  return ForkedWorker.fork(SCRIPT, {
    label: `kinds worker (${config.role})`,
    config: { env: KINDS_WORKER_ENV, value: config },
  });
}
