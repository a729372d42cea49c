import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { SCHEDULED_APP_ENV, ScheduledAppConfig, ScheduledAppMessage } from './scheduled-app-protocol';

const APP_SCRIPT = join(__dirname, 'scheduled-app.ts');
const TS_REGISTER = join(__dirname, '..', '..', 'support', 'ts-register.js');

/** Instances of scheduled-app.ts; every message any of them sent, in arrival order. */
export class ScheduledApps {
  readonly messages: ScheduledAppMessage[] = [];
  private readonly children = new Map<number, ChildProcess>();
  private readonly output = new Map<number, string>();
  private readonly listeners = new Set<() => void>();

  /** Forks `count` instances and resolves when each reported 'ready'. */
  async start(count: number, config: ScheduledAppConfig): Promise<void> {
    const ready: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      const child = fork(APP_SCRIPT, [], {
        execArgv: ['--require', TS_REGISTER],
        env: { ...process.env, [SCHEDULED_APP_ENV]: JSON.stringify(config) },
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      });
      const pid = child.pid!;
      this.children.set(pid, child);
      const keep = (chunk: Buffer) =>
        this.output.set(pid, ((this.output.get(pid) ?? '') + chunk.toString()).slice(-4000));
      child.stdout?.on('data', keep);
      child.stderr?.on('data', keep);
      child.on('message', (message: ScheduledAppMessage) => {
        this.messages.push(message);
        for (const listener of [...this.listeners]) listener();
      });
      child.once('exit', () => {
        this.children.delete(pid);
        for (const listener of [...this.listeners]) listener();
      });
      ready.push(
        this.next((message) => message.type === 'ready' && message.pid === pid, 60_000, `instance ${pid} ready`).then(
          () => undefined,
        ),
      );
    }
    await Promise.all(ready);
  }

  /** The next message (from now on) that matches. */
  next(
    matches: (message: ScheduledAppMessage) => boolean,
    timeoutMs: number,
    what: string,
  ): Promise<ScheduledAppMessage> {
    const from = this.messages.length;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          finish(
            new Error(`${what}: nothing within ${timeoutMs} ms. Output:\n${[...this.output.values()].join('\n')}`),
          ),
        timeoutMs,
      );
      const finish = (error?: Error, message?: ScheduledAppMessage) => {
        clearTimeout(timer);
        this.listeners.delete(check);
        if (error) reject(error);
        else resolve(message!);
      };
      const check = () => {
        const found = this.messages.slice(from).find(matches);
        if (found) finish(undefined, found);
      };
      this.listeners.add(check);
    });
  }

  get pids(): number[] {
    return [...this.children.keys()];
  }

  kill(pid: number): Promise<void> {
    return this.exit(pid, () => this.children.get(pid)?.kill('SIGKILL'));
  }

  /** Closes every instance's app gracefully and waits for the processes to exit. */
  async stopAll(): Promise<void> {
    await Promise.all(this.pids.map((pid) => this.exit(pid, () => this.children.get(pid)?.send({ type: 'stop' }))));
  }

  /** SIGKILLs whatever still runs (afterEach). */
  async killAll(): Promise<void> {
    await Promise.all(this.pids.map((pid) => this.kill(pid)));
  }

  private exit(pid: number, act: () => void): Promise<void> {
    const child = this.children.get(pid);
    if (!child) return Promise.resolve();
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    act();
    return exited;
  }
}
