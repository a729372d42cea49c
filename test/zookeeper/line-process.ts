import { ChildProcess, spawn } from 'node:child_process';

const live = new Set<LineProcess>();

/**
 * A child process that talks in lines: the Curator lock holder (Java) and the Node holder of the crash test.
 * Every one is SIGKILLed by `killAllLineProcesses()` (call it in afterEach) or when this process exits.
 */
export class LineProcess {
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly lines: string[] = [];
  private readonly waiters = new Set<() => void>();
  private partial = '';
  private log = '';
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;

  private constructor(private readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      this.log = (this.log + chunk).slice(-8_000);
      const parts = (this.partial + chunk).split('\n');
      this.partial = parts.pop()!;
      this.lines.push(...parts.map((line) => line.trim()).filter(Boolean));
      this.notify();
    });
    child.stderr!.on('data', (chunk: Buffer) => (this.log = (this.log + chunk.toString()).slice(-8_000)));
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        live.delete(this);
        this.notify();
        resolve(this.exitInfo);
      });
    });
  }

  static spawn(command: string, args: string[]): LineProcess {
    const process = new LineProcess(spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] }));
    live.add(process);
    return process;
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Everything the process printed lately (stdout and stderr), for failure messages. */
  get output(): string {
    return this.log;
  }

  /** The next printed line that starts with `prefix`; earlier lines are consumed. */
  nextLine(prefix: string, timeoutMs: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => finish(new Error(`no "${prefix}" line within ${timeoutMs} ms. Output:\n${this.log}`)),
        timeoutMs,
      );
      const finish = (error?: Error, line?: string) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        if (error) reject(error);
        else resolve(line!);
      };
      const check = () => {
        while (this.lines.length > 0) {
          const line = this.lines.shift()!;
          if (line.startsWith(prefix)) return finish(undefined, line);
        }
        if (this.exitInfo) {
          finish(
            new Error(
              `exited (code ${this.exitInfo.code}, signal ${this.exitInfo.signal}) before "${prefix}". Output:\n${this.log}`,
            ),
          );
        }
      };
      this.waiters.add(check);
      check();
    });
  }

  /** Writes one line to the process's stdin. */
  send(line: string): void {
    this.child.stdin!.write(`${line}\n`);
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.exitInfo) return;
    this.child.kill(signal);
    await this.exited;
  }

  private notify(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}

export async function killAllLineProcesses(): Promise<void> {
  await Promise.all([...live].map((child) => child.kill('SIGKILL')));
}

process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL').catch(() => undefined);
});
