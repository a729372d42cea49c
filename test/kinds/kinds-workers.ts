import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { KINDS_WORKER_ENV, KindsParentMessage, KindsWorkerConfig, KindsWorkerMessage } from './kinds-worker-protocol';

const WORKER_SCRIPT = join(__dirname, 'kinds-worker.ts');
const TS_REGISTER = join(__dirname, '..', 'support', 'ts-register.js');

type MessageOf<T extends KindsWorkerMessage['type']> = Extract<KindsWorkerMessage, { type: T }>;

const live = new Set<KindsWorker>();

/** A forked kinds worker as the test sees it. */
export class KindsWorker {
  private readonly inbox: KindsWorkerMessage[] = [];
  private readonly listeners = new Set<() => void>();
  private readonly exited: Promise<void>;
  private exitInfo: string | undefined;
  private output = '';

  constructor(
    readonly config: KindsWorkerConfig,
    private readonly child: ChildProcess,
  ) {
    child.on('message', (message: KindsWorkerMessage) => {
      this.inbox.push(message);
      this.notify();
    });
    const collect = (chunk: Buffer) => (this.output = (this.output + chunk.toString()).slice(-8000));
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = `code ${code}, signal ${signal}`;
        live.delete(this);
        this.notify();
        resolve();
      });
    });
  }

  send(message: KindsParentMessage): void {
    this.child.send(message);
  }

  /** The next message of `type`; rejects on an 'error' report, an exit, or `timeoutMs` of silence. */
  message<T extends KindsWorkerMessage['type']>(type: T, timeoutMs: number): Promise<MessageOf<T>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          finish(
            new Error(`kinds worker ${this.config.worker} sent no "${type}" within ${timeoutMs} ms.\n${this.output}`),
          ),
        timeoutMs,
      );
      const finish = (error?: Error, message?: KindsWorkerMessage) => {
        clearTimeout(timer);
        this.listeners.delete(check);
        if (error) reject(error);
        else resolve(message as MessageOf<T>);
      };
      const check = () => {
        const index = this.inbox.findIndex((message) => message.type === type || message.type === 'error');
        if (index >= 0) {
          const [message] = this.inbox.splice(index, 1);
          if (message.type === 'error')
            return finish(new Error(`kinds worker ${this.config.worker} failed: ${message.message}`));
          return finish(undefined, message);
        }
        if (this.exitInfo)
          finish(
            new Error(`kinds worker ${this.config.worker} exited (${this.exitInfo}) before "${type}".\n${this.output}`),
          );
      };
      this.listeners.add(check);
      check();
    });
  }

  /** SIGKILL by default: a crash, no clean-up of any kind. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.exitInfo) return;
    this.child.kill(signal);
    await this.exited;
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

/** Forks test/kinds/kinds-worker.ts under plain node with our TypeScript loader. */
export function spawnKindsWorker(config: KindsWorkerConfig): KindsWorker {
  const child = fork(WORKER_SCRIPT, [], {
    execArgv: ['--require', TS_REGISTER],
    env: { ...process.env, [KINDS_WORKER_ENV]: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const worker = new KindsWorker(config, child);
  live.add(worker);
  return worker;
}

/** SIGKILLs every kinds worker still running (afterEach), so a failed test leaves no process behind. */
export async function killKindsWorkers(): Promise<void> {
  await Promise.all([...live].map((worker) => worker.kill('SIGKILL')));
}

process.once('exit', () => {
  for (const worker of live) worker.kill('SIGKILL').catch(() => undefined);
});
