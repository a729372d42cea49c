import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ErrorMessage, ForkedWorker } from '../../support/worker';
import {
  CHAOS_WORKER_CONFIG_ENV,
  ChaosParentMessage,
  ChaosWorkerConfig,
  ChaosWorkerMessage,
  FailedAcquire,
  SectionRecord,
} from './worker-protocol';

const WORKER_SCRIPT = join(__dirname, 'chaos-worker.ts');

/** Where every worker's critical sections and failed acquisitions end up. */
export class HistoryCollector {
  readonly sections: SectionRecord[] = [];
  readonly failures: FailedAcquire[] = [];
}

/**
 * A forked chaos worker as the parent sees it: the shared worker harness, plus its history going to a collector
 * and its own 'stopping' report counting as stopped (it is about to SIGSTOP itself; see ForkedWorker.markStopped).
 */
export class ChaosWorker extends ForkedWorker<ChaosParentMessage, ChaosWorkerMessage> {
  private constructor(
    readonly config: ChaosWorkerConfig,
    child: ChildProcess,
    private readonly collector?: HistoryCollector,
  ) {
    super(child, `worker ${config.id}`);
    chaosWorkers.add(this);
    void this.exited.then(() => chaosWorkers.delete(this));
  }

  /** Forks test/chaos/harness/chaos-worker.ts under plain node with our TypeScript loader. */
  static start(
    config: ChaosWorkerConfig,
    options: { collector?: HistoryCollector; exposeGc?: boolean } = {},
  ): ChaosWorker {
    const child = ForkedWorker.forkChild(WORKER_SCRIPT, {
      config: { env: CHAOS_WORKER_CONFIG_ENV, value: config },
      nodeFlags: options.exposeGc ? ['--expose-gc'] : [],
    });
    return new ChaosWorker(config, child, options.collector);
  }

  get id(): string {
    return this.config.id;
  }

  /** What the worker printed, for failure messages. */
  get printed(): string {
    return this.output;
  }

  protected override intercept(message: ChaosWorkerMessage | ErrorMessage): boolean {
    if (message.type === 'sections') {
      this.collector?.sections.push(...message.sections);
      this.collector?.failures.push(...message.failures);
      return true;
    }
    if (message.type === 'stopping') this.markStopped(true);
    return false;
  }
}

/** Forks test/chaos/harness/chaos-worker.ts under plain node with our TypeScript loader. */
export function spawnChaosWorker(
  config: ChaosWorkerConfig,
  options: { collector?: HistoryCollector; exposeGc?: boolean } = {},
): ChaosWorker {
  return ChaosWorker.start(config, options);
}

const chaosWorkers = new Set<ChaosWorker>();

/** Resumes (SIGCONT) and SIGKILLs every chaos worker still running (the register stays: its scope stops it). */
export async function killAllChaosWorkers(): Promise<void> {
  await Promise.all([...chaosWorkers].map((worker) => worker.kill('SIGKILL')));
}
