import { ChildProcess, fork, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The one harness for TypeScript scripts in their own Node process (lock workers, kinds workers, chaos workers,
 * scheduled apps, bench workers, the chaos register): forked under plain node with ts-register.js, a typed
 * message protocol over IPC, and clean-up that leaves no process behind, not even a SIGSTOPped one.
 *
 * The parent side is `ForkedWorker`; the child side is `workerConfig`, `toParent`, `fromParent`.
 * A process that is no Node script of ours (a Java Curator client, a CLI) is started with `ForkedWorker.spawn`
 * and talks in lines instead: `nextLine(prefix)` reads its stdout, `writeLine` its stdin.
 * A worker reports a failure as `{ type: 'error', message }`: `message(type)` rejects with it.
 */

/** Lets forked processes (plain node, outside Jest) require our TypeScript sources. */
export const TS_REGISTER = join(__dirname, 'ts-register.js');

/** Every message a worker or parent sends has a `type`. */
export interface Message {
  readonly type: string;
}

/** What a worker sends when it fails. */
export interface ErrorMessage {
  readonly type: 'error';
  readonly message: string;
  readonly name?: string;
  readonly stack?: string;
}

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface ForkOptions {
  /** Names the worker in failure messages, e.g. `worker 2`. */
  label?: string;
  /** The worker's configuration, passed as JSON in this environment variable (read it with workerConfig). */
  config?: { env: string; value: unknown };
  /** More environment variables, on top of this process's. */
  env?: NodeJS.ProcessEnv;
  /** Node flags, e.g. `--expose-gc`. */
  nodeFlags?: string[];
  /** 'inherit' lets the worker's stderr through (a long-lived helper); by default both streams are kept for errors. */
  stderr?: 'pipe' | 'inherit';
  /** Working directory; this process's by default. */
  cwd?: string;
}

const OUTPUT_LIMIT = 8_000;
const live = new Set<{ readonly pid: number; kill(signal: NodeJS.Signals): Promise<void> }>();

/** A forked TypeScript script as its parent sees it. `In` is what the parent sends, `Out` what the worker sends. */
export class ForkedWorker<In extends Message, Out extends Message> {
  readonly exited: Promise<ExitInfo>;
  readonly label: string;
  private readonly inbox: (Out | ErrorMessage)[] = [];
  private readonly waiters = new Set<() => void>();
  private readonly listeners = new Map<string, Set<(message: Out) => void>>();
  private log = '';
  private readonly lines: string[] = [];
  private partialLine = '';
  private exitInfo: ExitInfo | undefined;
  /** Exited and its output read to the end ('close'): only then can a wait say the process never sent it. */
  private ended = false;
  private stopped = false;

  protected constructor(
    private readonly child: ChildProcess,
    label: string,
  ) {
    this.label = label;
    live.add(this);
    child.on('message', (message: Out | ErrorMessage) => this.receive(message));
    const collect = (chunk: Buffer) => {
      this.log = (this.log + chunk.toString()).slice(-OUTPUT_LIMIT);
      this.notify();
    };
    child.stdout?.on('data', (chunk: Buffer) => {
      const parts = (this.partialLine + chunk.toString()).split('\n');
      this.partialLine = parts.pop()!;
      this.lines.push(...parts.map((line) => line.trim()).filter(Boolean));
      collect(chunk);
    });
    child.stderr?.on('data', collect);
    this.exited = new Promise((resolve) => {
      const exit = (code: number | null, signal: NodeJS.Signals | null) => {
        if (this.exitInfo) return;
        this.exitInfo = { code, signal };
        this.markStopped(false);
        live.delete(this);
        this.notify();
        resolve(this.exitInfo);
      };
      child.once('exit', exit);
      // 'exit' can come before the last output and messages; waits give up only once everything was read.
      child.once('close', (code, signal) => {
        exit(code, signal);
        this.ended = true;
        this.notify();
      });
      // A command that cannot start (ENOENT) emits 'error' and never 'exit': count it as gone, with the reason.
      child.once('error', (error) => {
        collect(Buffer.from(`${String(error)}\n`));
        if (child.pid === undefined) {
          exit(-1, null);
          this.ended = true;
          this.notify();
        }
      });
    });
  }

  /** Forks `script` under plain node with ts-register.js. */
  static fork<In extends Message, Out extends Message>(
    script: string,
    options: ForkOptions = {},
  ): ForkedWorker<In, Out> {
    return new ForkedWorker<In, Out>(ForkedWorker.forkChild(script, options), options.label ?? 'worker');
  }

  /** Starts `command` (no IPC channel; it talks in lines on stdin/stdout), tracked and reaped like a fork. */
  static spawn(
    command: string,
    args: readonly string[],
    options: Pick<ForkOptions, 'label' | 'env' | 'cwd'> = {},
  ): ForkedWorker<never, never> {
    return new ForkedWorker<never, never>(ForkedWorker.spawnChild(command, args, options), options.label ?? command);
  }

  /** For subclasses, which wrap the child in their own constructor. */
  protected static spawnChild(
    command: string,
    args: readonly string[],
    options: Pick<ForkOptions, 'env' | 'cwd'>,
  ): ChildProcess {
    prepare();
    return spawn(command, [...args], {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
  }

  /** For subclasses, which wrap the child in their own constructor. */
  protected static forkChild(script: string, options: ForkOptions): ChildProcess {
    return forkScript(script, options);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get isRunning(): boolean {
    return this.exitInfo === undefined;
  }

  /** True between pause() (or the worker's own 'stopping' report, see markStopped) and resume(). */
  get isStopped(): boolean {
    return this.stopped;
  }

  /** What the worker printed lately (stdout and stderr), for failure messages. */
  get output(): string {
    return this.log;
  }

  /** Sends `message` if the worker is still there to read it. */
  send(message: In): void {
    if (this.isRunning && this.child.connected) this.child.send(message);
  }

  /** Routes every message of `type` to `listener` instead of the inbox that message() reads. */
  on<T extends Out['type']>(type: T, listener: (message: Extract<Out, { type: T }>) => void): void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(listener as (message: Out) => void);
  }

  /**
   * The next message of `type` (earlier ones of other types stay queued). Rejects when the worker reports an
   * error, exits first, or sends nothing of that type within `timeoutMs`.
   */
  message<T extends Out['type']>(type: T, timeoutMs = 60_000): Promise<Extract<Out, { type: T }>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => finish(new Error(`${this.label} sent no "${type}" within ${timeoutMs} ms. Output:\n${this.log}`)),
        timeoutMs,
      );
      const finish = (error?: Error, message?: Out) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        if (error) reject(error);
        else resolve(message as Extract<Out, { type: T }>);
      };
      const check = () => {
        const index = this.inbox.findIndex((message) => message.type === type || message.type === 'error');
        if (index >= 0) {
          const [message] = this.inbox.splice(index, 1);
          if (message.type === 'error') {
            const failure = message as ErrorMessage;
            return finish(
              new Error(`${this.label} failed: ${failure.name ?? 'Error'}: ${failure.message}\n${failure.stack ?? ''}`),
            );
          }
          return finish(undefined, message as Out);
        }
        if (this.ended && this.exitInfo) {
          const { code, signal } = this.exitInfo;
          finish(
            new Error(`${this.label} exited (code ${code}, signal ${signal}) before "${type}". Output:\n${this.log}`),
          );
        }
      };
      this.waiters.add(check);
      check();
    });
  }

  /** The next line the process printed on stdout that starts with `prefix`; earlier lines are consumed. */
  nextLine(prefix: string, timeoutMs: number): Promise<string> {
    return this.await(`a "${prefix}" line`, timeoutMs, () => {
      while (this.lines.length > 0) {
        const line = this.lines.shift()!;
        if (line.startsWith(prefix)) return line;
      }
      return undefined;
    });
  }

  /** The first match of `pattern` in what the process printed so far (stdout and stderr), once there is one. */
  outputMatching(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
    return this.await(`output matching ${pattern}`, timeoutMs, () => pattern.exec(this.log) ?? undefined);
  }

  /** Writes one line to the process's stdin (a process started with spawn). */
  writeLine(line: string): void {
    this.child.stdin?.write(`${line}\n`);
  }

  /** Resolves true if the process exits by itself within `timeoutMs`, false otherwise (it is left running). */
  async exitsWithin(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const result = await Promise.race([this.exited.then(() => true as const), timeout]);
    clearTimeout(timer);
    return result;
  }

  /** SIGSTOP: the process freezes with its sockets open, timers and all. */
  pause(): void {
    if (!this.isRunning) return;
    this.markStopped(true);
    this.child.kill('SIGSTOP');
  }

  /** SIGCONT after pause(). */
  resume(): void {
    if (!this.isRunning) return;
    this.child.kill('SIGCONT');
    this.markStopped(false);
  }

  /** Sends `signal` (default SIGKILL, a crash), resuming a stopped process so it can die, and waits for the exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.isRunning) return;
    this.child.kill(signal);
    if (this.stopped) this.resume();
    await this.exited;
  }

  /** Sends `signal` (a graceful stop by default) and waits for the exit; SIGKILLs it after `graceMs`. */
  async terminate(signal: NodeJS.Signals = 'SIGTERM', graceMs = 15_000): Promise<void> {
    if (!this.isRunning) return;
    this.child.kill(signal);
    if (this.stopped) this.resume();
    await this.stop(graceMs);
  }

  /** Waits for the worker to exit by itself; SIGKILLs it after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.isRunning) return;
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** Every message passes here first; a subclass may take some (return true) before the listeners and the inbox. */
  protected intercept(_message: Out | ErrorMessage): boolean {
    return false;
  }

  /**
   * Records that the process is stopped (its own report, or pause()): a parent that dies while a worker is
   * stopped cannot resume it, so the next parent finds it in STOPPED_DIR and kills it (resumeOrphans).
   */
  protected markStopped(stopped: boolean): void {
    if (this.stopped === stopped) return;
    this.stopped = stopped;
    const file = join(STOPPED_DIR, `${process.pid}-${this.pid}`);
    if (stopped) {
      mkdirSync(STOPPED_DIR, { recursive: true });
      writeFileSync(file, '');
    } else {
      rmSync(file, { force: true });
    }
  }

  private receive(message: Out | ErrorMessage): void {
    if (this.intercept(message)) return;
    const listeners = this.listeners.get(message.type);
    if (listeners && listeners.size > 0) {
      for (const listener of listeners) listener(message as Out);
      return;
    }
    this.inbox.push(message);
    this.notify();
  }

  /** Resolves with what `found` returns once it returns something; rejects when the process exits first or after `timeoutMs`. */
  private await<T>(what: string, timeoutMs: number, found: () => T | undefined): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => finish(new Error(`${this.label}: no ${what} within ${timeoutMs} ms. Output:\n${this.log}`)),
        timeoutMs,
      );
      const finish = (error?: Error, value?: T) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        if (error) reject(error);
        else resolve(value as T);
      };
      const check = () => {
        const value = found();
        if (value !== undefined) return finish(undefined, value);
        if (this.ended && this.exitInfo) {
          const { code, signal } = this.exitInfo;
          finish(
            new Error(`${this.label} exited (code ${code}, signal ${signal}) before ${what}. Output:\n${this.log}`),
          );
        }
      };
      this.waiters.add(check);
      check();
    });
  }

  private notify(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}

/** SIGKILLs (resuming stopped ones) every worker this process forked that still runs; call it in afterEach. */
export async function killAllWorkers(): Promise<void> {
  await Promise.all([...live].map((worker) => worker.kill('SIGKILL')));
}

const STOPPED_DIR = join(tmpdir(), 'ndl-stopped-workers');
let orphansReaped = false;
let exitHookInstalled = false;

function prepare(): void {
  if (!orphansReaped) {
    orphansReaped = true;
    resumeOrphans();
  }
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', killAllWorkersSync);
  }
}

function forkScript(script: string, options: ForkOptions): ChildProcess {
  prepare();
  const child = fork(script, [], {
    cwd: options.cwd,
    execArgv: [...(options.nodeFlags ?? []), '--require', TS_REGISTER],
    env: {
      ...process.env,
      ...options.env,
      ...(options.config && { [options.config.env]: JSON.stringify(options.config.value) }),
    },
    stdio: ['ignore', 'pipe', options.stderr ?? 'pipe', 'ipc'],
  });
  return child;
}

function killAllWorkersSync(): void {
  for (const worker of live) {
    try {
      process.kill(worker.pid, 'SIGKILL');
      process.kill(worker.pid, 'SIGCONT');
    } catch {
      // gone already
    }
  }
}

/** Kills workers that a dead parent left stopped (see markStopped). Checks the command line before killing. */
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
    if (commandLine.includes('ts-register')) {
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

// ---- the worker's side ----

/** In a worker: the configuration its parent passed in ForkOptions.config. */
export function workerConfig<T>(env: string): T {
  const raw = process.env[env];
  if (!raw) throw new Error(`${env} is not set: this script is a worker, started by ForkedWorker.fork`);
  return JSON.parse(raw) as T;
}

/** In a worker: sends `message` to the parent; resolves once it is written. */
export function toParent<T extends Message>(message: T): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!process.send) return reject(new Error('this script must be started with child_process.fork (no IPC channel)'));
    process.send(message, (error: Error | null) => (error ? reject(error) : resolve()));
  });
}

/** In a worker: the next message of `type` from the parent. */
export function fromParent<T extends Message>(type: T['type']): Promise<T> {
  return new Promise((resolve) => {
    const listener = (message: T) => {
      if (message?.type !== type) return;
      process.off('message', listener);
      resolve(message);
    };
    process.on('message', listener);
  });
}

/** In a worker: `error` as the message that makes the parent's message() reject. */
export function errorMessage(error: unknown): ErrorMessage {
  const failure = error instanceof Error ? error : new Error(String(error));
  return { type: 'error', name: failure.name, message: failure.message, stack: failure.stack };
}

let keepAlive: NodeJS.Timeout | undefined;
let leaving = false;

/**
 * In a worker: keeps the process alive while it works (the library's timers are unref'd, and an IPC channel
 * holds a process open only while it has 'message' listeners), and exits it when the parent goes away, even by
 * SIGKILL, so it never lingers as an orphan.
 */
export function stayAlive(): void {
  if (keepAlive) return;
  keepAlive = setInterval(() => undefined, 1_000);
  process.on('disconnect', () => {
    if (!leaving) process.exit(2);
  });
}

/** In a worker: drops the keep-alive timer only, so that what stays open afterwards is only the library's. */
export function stopKeepingAlive(): void {
  clearInterval(keepAlive);
}

/** In a worker, when done: drops the keep-alive and closes the IPC channel; the process then exits once idle. */
export function leave(): void {
  leaving = true;
  stopKeepingAlive();
  process.removeAllListeners('message');
  process.disconnect();
}

/**
 * In a process that must exit by itself once it closed everything (the lifecycle tests): if it is still alive
 * `afterMs` later, says on stderr what keeps it open. Unref'd, so it never holds the process itself.
 */
export function reportIfStillAlive(afterMs: number): void {
  setTimeout(() => {
    process.stderr.write(
      `still alive after close; active resources: ${JSON.stringify(process.getActiveResourcesInfo())}\n`,
    );
  }, afterMs).unref();
}

/**
 * In a worker: runs `main`; a failure goes to the parent as an ErrorMessage and exits 1. With `exitWhenDone`
 * the process exits 0 after `main` (a client library's idle handle must not keep a finished bench worker alive);
 * without, it exits by itself once nothing keeps it open, which the lifecycle tests rely on.
 */
export function runWorker(main: () => Promise<void>, options: { exitWhenDone?: boolean } = {}): void {
  main().then(
    () => options.exitWhenDone && process.exit(0),
    async (error: unknown) => {
      await toParent(errorMessage(error)).catch(() => undefined);
      process.exit(1);
    },
  );
}
