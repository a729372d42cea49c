import { randomBytes } from 'node:crypto';
import type { ChaosBackendKind } from './backends';
import { startRegister, Register } from './register';
import type { Scope } from './scope';
import { ChaosWorker, HistoryCollector, spawnChaosWorker } from './workers';
import type { IncrementSummary, IncrementTask } from './worker-protocol';

export interface IncrementRunOptions {
  readonly backend: ChaosBackendKind;
  /** Every worker's address, or one per worker (e.g. through its own proxy). */
  readonly address: string | ((worker: number) => string);
  /** OS processes; memory must use 1 (its locks live in one process). */
  readonly workers: number;
  readonly task: Omit<IncrementTask, 'type'>;
  /** false: the control run's register, which accepts stale tokens. Default true. */
  readonly fenced?: boolean;
  readonly operationTimeout?: number;
  /** Keep the register's per-key history (default true; off for many keys). */
  readonly registerHistory?: boolean;
}

/** Workers incrementing the register under the lock, started and connected, waiting for go(). */
export interface IncrementRun {
  readonly keyPrefix: string;
  readonly workers: ChaosWorker[];
  readonly collector: HistoryCollector;
  readonly register: Register;
  go(): void;
  /** Waits for every worker's summary. */
  done(timeoutMs: number): Promise<IncrementSummary[]>;
  /** True once every worker reported done. */
  readonly finished: boolean;
}

export function chaosNamespace(label: string): string {
  return `chaos-${label}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

export async function startIncrementRun(scope: Scope, options: IncrementRunOptions): Promise<IncrementRun> {
  const register = scope.defer(
    await startRegister({ fenced: options.fenced ?? true, history: options.registerHistory }),
  );
  const collector = new HistoryCollector();
  const keyPrefix = chaosNamespace(options.backend);
  const workers = Array.from({ length: options.workers }, (_, index) =>
    spawnChaosWorker(
      {
        id: `w${index}`,
        backend: options.backend,
        address: typeof options.address === 'string' ? options.address : options.address(index),
        keyPrefix,
        registerPort: register.port,
        ...(options.operationTimeout !== undefined && { operationTimeout: options.operationTimeout }),
        task: { type: 'increments', ...options.task },
      },
      { collector },
    ),
  );
  await Promise.all(workers.map((worker) => worker.message('ready', 60_000)));
  let done = 0;
  const summaries = workers.map((worker) =>
    worker.message('done', 60 * 60_000).then((message) => {
      done += 1;
      return message.summary!;
    }),
  );
  // Observed by done(); without this an early failure would be an unhandled rejection.
  for (const summary of summaries) summary.catch(() => undefined);
  return {
    keyPrefix,
    workers,
    collector,
    register,
    go: () => workers.forEach((worker) => worker.send({ type: 'go' })),
    get finished() {
      return done === workers.length;
    },
    async done(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the workers did not finish within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        return await Promise.race([Promise.all(summaries), timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
