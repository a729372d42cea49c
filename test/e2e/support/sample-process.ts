import { join } from 'node:path';
import { ForkedWorker } from '../../support/worker';

const ROOT = join(__dirname, '..', '..', '..');
const MAIN = join(ROOT, 'sample', 'main.ts');
const LISTENING = /Listening on (http:\/\/127\.0\.0\.1:\d+)/;

/** One running sample app (a separate OS process, like one replica of a deployment). */
export interface SampleProcess {
  readonly name: string;
  readonly url: string;
  readonly pid: number;
  /** SIGKILL: no shutdown hook runs, so its locks are only freed by their ttl. */
  kill(): Promise<void>;
  /** SIGTERM: graceful shutdown (releases its locks). */
  stop(): Promise<void>;
}

/**
 * Starts `sample/main.ts` through the worker harness with the given environment (LOCK_BACKEND,
 * REDIS_URL / ETCD_HOSTS, FILES_DIR, ...) on a free port, and resolves once it listens.
 */
export async function startSample(
  name: string,
  env: Record<string, string>,
  startupMs = 90_000,
): Promise<SampleProcess> {
  const app = ForkedWorker.fork(MAIN, {
    label: `sample ${name}`,
    cwd: ROOT,
    env: { PORT: '0', HOST: '127.0.0.1', NO_COLOR: '1', SNAPSHOT_INTERVAL_MS: '0', ...env },
  });
  let url: string;
  try {
    [, url] = await app.outputMatching(LISTENING, startupMs);
  } catch (error) {
    await app.kill('SIGKILL');
    throw error;
  }
  return {
    name,
    url,
    pid: app.pid,
    kill: () => app.kill('SIGKILL'),
    stop: () => app.terminate('SIGTERM', 15_000),
  };
}
