import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { KINDS_WORKER_ENV, type KindsWorkerConfig, type KindsWorkerMessage } from './kinds-worker-protocol';

const SCRIPT = join(__dirname, 'kinds-worker.ts');
const TS_REGISTER = join(__dirname, '..', 'support', 'ts-register.js');

type MessageOf<T extends KindsWorkerMessage['type']> = Extract<KindsWorkerMessage, { type: T }>;

const live = new Set<KindsWorker>();

/** A forked kinds-worker.ts as the parent test sees it. */
export class KindsWorker {
  private readonly inbox: KindsWorkerMessage[] = [];
  private readonly listeners = new Set<() => void>();
  private output = '';
  private exitInfo?: { code: number | null; signal: NodeJS.Signals | null };
  readonly exited: Promise<void>;

  constructor(private readonly child: ChildProcess) {
    child.on('message', (message: KindsWorkerMessage) => {
      this.inbox.push(message);
      this.listeners.forEach((listener) => listener());
    });
    const collect = (chunk: Buffer) => (this.output = (this.output + chunk.toString()).slice(-8000));
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        live.delete(this);
        this.listeners.forEach((listener) => listener());
        resolve();
      }),
    );
  }

  go(): void {
    this.child.send({ type: 'go' });
  }

  /** The next message of `type`; rejects on an 'error' message, an exit, or silence for `timeoutMs`. */
  message<T extends KindsWorkerMessage['type']>(type: T, timeoutMs = 60_000): Promise<MessageOf<T>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => finish(new Error(`worker sent no "${type}" within ${timeoutMs} ms:\n${this.output}`)),
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
            return finish(new Error(`worker failed: ${message.message}\n${message.stack ?? ''}`));
          return finish(undefined, message);
        }
        if (this.exitInfo)
          finish(new Error(`worker exited (${JSON.stringify(this.exitInfo)}) before "${type}":\n${this.output}`));
      };
      this.listeners.add(check);
      check();
    });
  }

  async kill(): Promise<void> {
    if (this.exitInfo) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }
}

export function forkKindsWorker(config: KindsWorkerConfig): KindsWorker {
  const child = fork(SCRIPT, [], {
    execArgv: ['--require', TS_REGISTER],
    env: { ...process.env, [KINDS_WORKER_ENV]: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const worker = new KindsWorker(child);
  live.add(worker);
  return worker;
}

/** SIGKILLs every worker still running: call in afterEach so that a failed test leaves no process behind. */
export async function killKindsWorkers(): Promise<void> {
  await Promise.all([...live].map((worker) => worker.kill()));
}

process.once('exit', () => live.forEach((worker) => void worker.kill()));
