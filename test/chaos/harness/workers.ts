import { ChildProcess, fork } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TS_REGISTER } from './paths';
import {
  CHAOS_WORKER_CONFIG_ENV,
  ChaosParentMessage,
  ChaosWorkerConfig,
  ChaosWorkerMessage,
  FailedAcquire,
  SectionRecord,
} from './worker-protocol';

const WORKER_SCRIPT = join(__dirname, 'chaos-worker.ts');

type MessageOf<T extends ChaosWorkerMessage['type']> = Extract<ChaosWorkerMessage, { type: T }>;

/** Where every worker's critical sections and failed acquisitions end up. */
export class HistoryCollector {
  readonly sections: SectionRecord[] = [];
  readonly failures: FailedAcquire[] = [];
}

/** A forked chaos worker as the parent sees it. */
export class ChaosWorker {
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly inbox: ChaosWorkerMessage[] = [];
  private readonly waiters = new Set<() => void>();
  private readonly listeners = new Map<string, Set<(message: ChaosWorkerMessage) => void>>();
  private output = '';
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private stopped = false;

  constructor(
    readonly config: ChaosWorkerConfig,
    private readonly child: ChildProcess,
    collector?: HistoryCollector,
  ) {
    child.on('message', (message: ChaosWorkerMessage) => {
      if (message.type === 'sections') {
        collector?.sections.push(...message.sections);
        collector?.failures.push(...message.failures);
        return;
      }
      if (message.type === 'stopping') this.markStopped(true);
      const listeners = this.listeners.get(message.type);
      if (listeners && listeners.size > 0) {
        for (const listener of listeners) listener(message);
        return;
      }
      this.inbox.push(message);
      this.notify();
    });
    const collect = (chunk: Buffer) => (this.output = (this.output + chunk.toString()).slice(-8_000));
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        this.markStopped(false);
        live.delete(this);
        this.notify();
        resolve(this.exitInfo);
      });
    });
  }

  get id(): string {
    return this.config.id;
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get isRunning(): boolean {
    return this.exitInfo === undefined;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** What the worker printed, for failure messages. */
  get printed(): string {
    return this.output;
  }

  send(message: ChaosParentMessage): void {
    if (this.isRunning && this.child.connected) this.child.send(message);
  }

  /** Routes every message of `type` to `listener` instead of the inbox. */
  on<T extends ChaosWorkerMessage['type']>(type: T, listener: (message: MessageOf<T>) => void): void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(listener as (message: ChaosWorkerMessage) => void);
  }

  /** The next message of `type`; rejects when the worker reports an error, exits first, or stays silent. */
  message<T extends ChaosWorkerMessage['type']>(type: T, timeoutMs = 60_000): Promise<MessageOf<T>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => finish(new Error(`worker ${this.id} sent no "${type}" within ${timeoutMs} ms. Output:\n${this.output}`)),
        timeoutMs,
      );
      const finish = (error?: Error, message?: ChaosWorkerMessage) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        if (error) reject(error);
        else resolve(message as MessageOf<T>);
      };
      const check = () => {
        const index = this.inbox.findIndex((message) => message.type === type || message.type === 'error');
        if (index >= 0) {
          const [message] = this.inbox.splice(index, 1);
          if (message.type === 'error') {
            return finish(
              new Error(`worker ${this.id} failed: ${message.name}: ${message.message}\n${message.stack ?? ''}`),
            );
          }
          return finish(undefined, message);
        }
        if (this.exitInfo) {
          const { code, signal } = this.exitInfo;
          finish(
            new Error(
              `worker ${this.id} exited (code ${code}, signal ${signal}) before "${type}". Output:\n${this.output}`,
            ),
          );
        }
      };
      this.waiters.add(check);
      check();
    });
  }

  /** SIGSTOP: the process freezes with its sockets open, timers and all. */
  pause(): void {
    if (!this.isRunning) return;
    this.markStopped(true);
    this.child.kill('SIGSTOP');
  }

  resume(): void {
    if (!this.isRunning) return;
    this.child.kill('SIGCONT');
    this.markStopped(false);
  }

  /** Sends `signal` (default SIGKILL, a crash), resuming a stopped process first, and waits for the exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.isRunning) return;
    this.child.kill(signal);
    if (this.stopped) this.resume();
    await this.exited;
  }

  /** Resolves true if the process exits by itself within `timeoutMs`. */
  async exitsWithin(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const result = await Promise.race([this.exited.then(() => true as const), timeout]);
    clearTimeout(timer);
    return result;
  }

  private markStopped(stopped: boolean): void {
    this.stopped = stopped;
    const file = join(STOPPED_DIR, `${process.pid}-${this.pid}`);
    if (stopped) {
      mkdirSync(STOPPED_DIR, { recursive: true });
      writeFileSync(file, '');
    } else {
      rmSync(file, { force: true });
    }
  }

  private notify(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}

const live = new Set<ChaosWorker>();

/**
 * Stopped workers are listed here (`<parent pid>-<worker pid>`): a parent killed while a worker was stopped
 * cannot resume it, and a stopped process would never notice its parent is gone. The next run resumes them,
 * and they exit on their own once they see their IPC channel closed.
 */
const STOPPED_DIR = join(tmpdir(), 'ndl-chaos-stopped');

function resumeOrphans(): void {
  let names: string[];
  try {
    names = readdirSync(STOPPED_DIR);
  } catch {
    return;
  }
  for (const name of names) {
    const [parent, worker] = name.split('-').map(Number);
    if (isAlive(parent)) continue;
    let commandLine = '';
    try {
      commandLine = readFileSync(`/proc/${worker}/cmdline`, 'utf8');
    } catch {
      // gone already
    }
    if (commandLine.includes('chaos-worker')) {
      try {
        process.kill(worker, 'SIGKILL');
        process.kill(worker, 'SIGCONT');
      } catch {
        // exited meanwhile
      }
    }
    rmSync(join(STOPPED_DIR, name), { force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

let reaped = false;

/** Forks test/chaos/harness/chaos-worker.ts under plain node with our TypeScript loader. */
export function spawnChaosWorker(
  config: ChaosWorkerConfig,
  options: { collector?: HistoryCollector; exposeGc?: boolean } = {},
): ChaosWorker {
  if (!reaped) {
    reaped = true;
    resumeOrphans();
  }
  const child = fork(WORKER_SCRIPT, [], {
    execArgv: ['--require', TS_REGISTER, ...(options.exposeGc ? ['--expose-gc'] : [])],
    env: { ...process.env, [CHAOS_WORKER_CONFIG_ENV]: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const worker = new ChaosWorker(config, child, options.collector);
  live.add(worker);
  return worker;
}

/** Resumes (SIGCONT) and SIGKILLs every chaos worker still running. */
export async function killAllChaosWorkers(): Promise<void> {
  await Promise.all([...live].map((worker) => worker.kill('SIGKILL')));
}

process.once('exit', () => {
  for (const worker of live) {
    try {
      process.kill(worker.pid, 'SIGKILL');
      process.kill(worker.pid, 'SIGCONT');
    } catch {
      // gone
    }
  }
});
