/**
 * A lock client in its own OS process, forked by workers.ts (with ts-register.js, outside Jest), so the parent
 * can SIGSTOP, SIGKILL and SIGCONT it. Reads its ChaosWorkerConfig from the environment, runs its task and
 * reports over IPC (worker-protocol.ts).
 */
import { runHoldTask } from './hold-task';
import { runIncrementTask } from './increment-task';
import { runLeakCycles } from './leak-cycles';
import { leave, next, send, stopKeepingAlive } from './worker-ipc';
import { CHAOS_WORKER_CONFIG_ENV, ChaosWorkerConfig, LeakTask } from './worker-protocol';

async function leak(config: ChaosWorkerConfig, task: LeakTask): Promise<void> {
  await send({ type: 'ready' });
  await next('go');
  // Our own keep-alive timer must not count as something the library left open.
  stopKeepingAlive();
  const report = await runLeakCycles(config, task);
  await send({ type: 'done', leak: report });
  leave();
}

async function main(): Promise<void> {
  const raw = process.env[CHAOS_WORKER_CONFIG_ENV];
  if (!raw) throw new Error(`${CHAOS_WORKER_CONFIG_ENV} is not set`);
  const config = JSON.parse(raw) as ChaosWorkerConfig;
  switch (config.task.type) {
    case 'increments':
      return runIncrementTask(config, config.task);
    case 'hold':
      return runHoldTask(config, config.task);
    case 'leak':
      return leak(config, config.task);
  }
}

main().catch(async (error: unknown) => {
  const failure = error instanceof Error ? error : new Error(String(error));
  await send({ type: 'error', name: failure.name, message: failure.message, stack: failure.stack }).catch(
    () => undefined,
  );
  process.exit(1);
});
