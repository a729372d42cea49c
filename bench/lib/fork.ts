import { ForkedWorker, type Message, runWorker as runForkedWorker, workerConfig } from '../../test/support/worker';

/** Bench workers go through the tests' one worker harness (test/support/worker.ts); this names the payload's variable. */
export { fromParent, toParent } from '../../test/support/worker';

const PAYLOAD_ENV = 'BENCH_WORKER_PAYLOAD';

export type WorkerMessage = Message;
/** What a bench parent sends: any message with a type (the scenarios define their own). */
type ParentMessage = Message & Record<string, unknown>;

/** A bench script in its own Node process (TypeScript through the repo's register hook), talking over IPC. */
export const Worker = {
  start<Out extends Message>(
    script: string,
    payload: unknown,
    nodeFlags: string[] = [],
    env: NodeJS.ProcessEnv = {},
  ): ForkedWorker<ParentMessage, Out> {
    return ForkedWorker.fork<ParentMessage, Out>(script, {
      label: 'bench worker',
      config: { env: PAYLOAD_ENV, value: payload },
      nodeFlags,
      env,
    });
  },
};

/** In a worker: the payload the parent passed to Worker.start. */
export function workerPayload<T>(): T {
  return workerConfig<T>(PAYLOAD_ENV);
}

/** Runs a worker's main; reports a failure to the parent and exits 1, or exits 0 when done. */
export function runWorker(main: () => Promise<void>): void {
  // Exit explicitly: a client library's idle handle must not keep a finished worker alive.
  runForkedWorker(main, { exitWhenDone: true });
}
