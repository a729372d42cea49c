import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { WORKER_CONFIG_ENV, WorkerConfig, WorkerMessage, ParentMessage } from './worker-protocol';

const WORKER_SCRIPT = join(__dirname, 'lock-worker.ts');
const TS_REGISTER = join(__dirname, '..', 'support', 'ts-register.js');

type MessageOf<T extends WorkerMessage['type']> = Extract<WorkerMessage, { type: T }>;

/** A forked lock worker as the parent test sees it. */
export class WorkerProcess {
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly inbox: WorkerMessage[] = [];
  private readonly listeners = new Set<() => void>();
  private stderr = '';
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;

  constructor(
    readonly config: WorkerConfig,
    private readonly child: ChildProcess,
  ) {
    child.on('message', (message: WorkerMessage) => {
      this.inbox.push(message);
      this.notify();
    });
    child.stdout?.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-8000)));
    child.stderr?.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-8000)));
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        live.delete(this);
        this.notify();
        resolve(this.exitInfo);
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** What the worker printed (stdout and stderr), for failure messages. */
  get output(): string {
    return this.stderr;
  }

  send(message: ParentMessage): void {
    this.child.send(message);
  }

  /**
   * The next message of `type`. Rejects when the worker reports an error, exits first, or stays silent for `timeoutMs`.
   */
  message<T extends WorkerMessage['type']>(type: T, timeoutMs = 30_000): Promise<MessageOf<T>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          finish(
            new Error(`worker ${this.config.worker} sent no "${type}" within ${timeoutMs} ms. Output:\n${this.stderr}`),
          ),
        timeoutMs,
      );
      const finish = (error?: Error, message?: WorkerMessage) => {
        clearTimeout(timer);
        this.listeners.delete(check);
        if (error) reject(error);
        else resolve(message as MessageOf<T>);
      };
      const check = () => {
        const index = this.inbox.findIndex((message) => message.type === type || message.type === 'error');
        if (index >= 0) {
          const [message] = this.inbox.splice(index, 1);
          if (message.type === 'error') {
            const error = new Error(
              `worker ${this.config.worker} failed: ${message.name}: ${message.message}\n${message.stack ?? ''}`,
            );
            return finish(error);
          }
          return finish(undefined, message);
        }
        if (this.exitInfo) {
          const { code, signal } = this.exitInfo;
          finish(
            new Error(
              `worker ${this.config.worker} exited (code ${code}, signal ${signal}) before "${type}". Output:\n${this.stderr}`,
            ),
          );
        }
      };
      this.listeners.add(check);
      check();
    });
  }

  /** Resolves true if the process exits by itself within `timeoutMs`, false otherwise (it is left running). */
  async exitsWithin(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const result = await Promise.race([this.exited.then(() => true as const), timeout]);
    clearTimeout(timer);
    return result;
  }

  /** Sends `signal` (default SIGKILL, a crash) and waits for the exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.exitInfo) return;
    this.child.kill(signal);
    await this.exited;
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

const live = new Set<WorkerProcess>();

/** Forks test/workers/lock-worker.ts under plain node with our TypeScript loader. */
export function spawnWorker(config: WorkerConfig): WorkerProcess {
  const child = fork(WORKER_SCRIPT, [], {
    execArgv: ['--require', TS_REGISTER],
    env: { ...process.env, [WORKER_CONFIG_ENV]: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const worker = new WorkerProcess(config, child);
  live.add(worker);
  return worker;
}

/** SIGKILLs every worker still running; call it in afterEach so a failed test leaves no process behind. */
export async function killAllWorkers(): Promise<void> {
  await Promise.all([...live].map((worker) => worker.kill('SIGKILL')));
}

process.once('exit', () => {
  for (const worker of live) worker.kill('SIGKILL').catch(() => undefined);
});
