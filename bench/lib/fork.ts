import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';

const TS_REGISTER = join(__dirname, '..', '..', 'test', 'support', 'ts-register.js');
const PAYLOAD_ENV = 'BENCH_WORKER_PAYLOAD';

export interface WorkerMessage {
  readonly type: string;
}

interface ErrorMessage {
  readonly type: 'error';
  readonly message: string;
  readonly stack?: string;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** A bench script in its own Node process (TypeScript through the repo's register hook), talking over IPC. */
export class Worker<Out extends WorkerMessage> {
  private readonly inbox: (Out | ErrorMessage)[] = [];
  private readonly waiting = new Set<() => void>();
  private output = '';
  private exitCode: number | null | undefined;
  readonly exited: Promise<void>;

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (message: Out | ErrorMessage) => {
      this.inbox.push(message);
      this.notify();
    });
    const keep = (chunk: Buffer) => (this.output = (this.output + chunk.toString()).slice(-4000));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) =>
      child.once('exit', (code) => {
        this.exitCode = code;
        live.delete(child);
        this.notify();
        resolve();
      }),
    );
  }

  static start<Out extends WorkerMessage>(
    script: string,
    payload: unknown,
    nodeFlags: string[] = [],
    env: NodeJS.ProcessEnv = {},
  ): Worker<Out> {
    const child = fork(script, [], {
      execArgv: [...nodeFlags, '--require', TS_REGISTER],
      env: { ...process.env, ...env, [PAYLOAD_ENV]: JSON.stringify(payload) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    live.add(child);
    return new Worker<Out>(child);
  }

  /** The worker's process id (to read its CPU time from /proc). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  send<T extends WorkerMessage>(message: T): void {
    this.child.send(message);
  }

  /** The next message of `type`; rejects when the worker reports an error, exits, or stays silent too long. */
  next<T extends Out['type']>(type: T, timeoutMs = 60_000): Promise<Extract<Out, { type: T }>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => settle(new Error(`bench worker sent no "${type}" within ${timeoutMs} ms:\n${this.output}`)),
        timeoutMs,
      );
      const settle = (error?: Error, message?: Out) => {
        clearTimeout(timer);
        this.waiting.delete(check);
        if (error) reject(error);
        else resolve(message as Extract<Out, { type: T }>);
      };
      const check = () => {
        const index = this.inbox.findIndex((message) => message.type === type || message.type === 'error');
        if (index >= 0) {
          const [message] = this.inbox.splice(index, 1);
          if (message.type === 'error') {
            const failure = message as ErrorMessage;
            return settle(new Error(`bench worker failed: ${failure.stack ?? failure.message}`));
          }
          return settle(undefined, message as Out);
        }
        if (this.exitCode !== undefined)
          settle(new Error(`bench worker exited (code ${this.exitCode}) before "${type}":\n${this.output}`));
      };
      this.waiting.add(check);
      check();
    });
  }

  /** Waits for a clean exit, then makes sure the process is gone. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.exitCode !== undefined) return;
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  kill(): Promise<void> {
    if (this.exitCode === undefined) this.child.kill('SIGKILL');
    return this.exited;
  }

  private notify(): void {
    for (const check of [...this.waiting]) check();
  }
}

/** In a worker: the payload the parent passed to Worker.start. */
export function workerPayload<T>(): T {
  const raw = process.env[PAYLOAD_ENV];
  if (!raw) throw new Error('this script is a bench worker; bench/run.ts forks it');
  return JSON.parse(raw) as T;
}

export function toParent<T extends WorkerMessage>(message: T): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!process.send) return reject(new Error('bench workers must be forked with an IPC channel'));
    process.send(message, (error: Error | null) => (error ? reject(error) : resolve()));
  });
}

export function fromParent<T extends WorkerMessage>(type: T['type']): Promise<T> {
  return new Promise((resolve) => {
    const listener = (message: T) => {
      if (message?.type !== type) return;
      process.off('message', listener);
      resolve(message);
    };
    process.on('message', listener);
  });
}

/** Runs a worker's main; reports a failure to the parent and exits non-zero. */
export function runWorker(main: () => Promise<void>): void {
  main().then(
    // Exit explicitly: a client library's idle handle must not keep a finished worker alive.
    () => process.exit(0),
    async (error: unknown) => {
      const failure = error instanceof Error ? error : new Error(String(error));
      await toParent<ErrorMessage>({ type: 'error', message: failure.message, stack: failure.stack }).catch(
        () => undefined,
      );
      process.exit(1);
    },
  );
}
