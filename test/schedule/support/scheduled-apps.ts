import { join } from 'node:path';
import { ForkedWorker } from '../../support/worker';
import { SCHEDULED_APP_ENV, ScheduledAppConfig, ScheduledAppMessage } from './scheduled-app-protocol';

const APP_SCRIPT = join(__dirname, 'scheduled-app.ts');

type App = ForkedWorker<{ type: 'stop' }, ScheduledAppMessage>;

/** Instances of scheduled-app.ts; every message any of them sent, in arrival order. */
export class ScheduledApps {
  readonly messages: ScheduledAppMessage[] = [];
  private readonly apps = new Map<number, App>();
  private readonly listeners = new Set<() => void>();

  /** Forks `count` instances and resolves when each reported 'ready'. */
  async start(count: number, config: ScheduledAppConfig): Promise<void> {
    const ready: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      const app: App = ForkedWorker.fork(APP_SCRIPT, {
        label: `scheduled app ${i}`,
        config: { env: SCHEDULED_APP_ENV, value: config },
      });
      const pid = app.pid;
      this.apps.set(pid, app);
      const collect = (message: ScheduledAppMessage) => {
        this.messages.push(message);
        for (const listener of [...this.listeners]) listener();
      };
      app.on('ready', collect);
      app.on('ran', collect);
      app.on('skipped', collect);
      void app.exited.then(() => {
        this.apps.delete(pid);
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
            new Error(
              `${what}: nothing within ${timeoutMs} ms. Output:\n${[...this.apps.values()].map((app) => app.output).join('\n')}`,
            ),
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
    return [...this.apps.keys()];
  }

  async kill(pid: number): Promise<void> {
    await this.apps.get(pid)?.kill('SIGKILL');
  }

  /** Closes every instance's app gracefully and waits for the processes to exit. */
  async stopAll(): Promise<void> {
    await Promise.all(
      [...this.apps.values()].map(async (app) => {
        app.send({ type: 'stop' });
        await app.exited;
      }),
    );
  }

  /** SIGKILLs whatever still runs (afterEach). */
  async killAll(): Promise<void> {
    await Promise.all(this.pids.map((pid) => this.kill(pid)));
  }
}
