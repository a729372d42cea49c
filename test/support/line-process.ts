import { ForkedWorker, killAllWorkers } from './worker';

/**
 * A child process that talks in lines (the Curator clients in Java, etcdctl, the Node holders of the crash
 * tests): the worker harness's `ForkedWorker.spawn`, read with `nextLine(prefix)`, written with `writeLine`.
 * `killAllLineProcesses()` (call it in afterEach) or this process's exit SIGKILLs every one.
 */
export type LineProcess = ForkedWorker<never, never>;

export const LineProcess = {
  spawn: (command: string, args: string[]): LineProcess => ForkedWorker.spawn(command, args),
};

export const killAllLineProcesses = killAllWorkers;
