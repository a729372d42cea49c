import { ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');
const TS_REGISTER = join(ROOT, 'test', 'support', 'ts-register.js');
const MAIN = join(ROOT, 'sample', 'main.ts');
const LISTENING = /Listening on (http:\/\/127\.0\.0\.1:\d+)/;

/** One running sample app (a separate OS process, like one replica of a deployment). */
export interface SampleProcess {
  readonly name: string;
  readonly url: string;
  readonly pid: number;
  /** SIGKILL: no shutdown hook runs, so its locks are only freed by their ttl. */
  kill(): Promise<void>;
  /** SIGTERM: graceful shutdown (releases its locks). */
  stop(): Promise<void>;
}

/**
 * Starts `sample/main.ts` under the TypeScript register hook with the given environment (LOCK_BACKEND,
 * REDIS_URL / ETCD_HOSTS, FILES_DIR, ...) on a free port, and resolves once it listens.
 */
export async function startSample(
  name: string,
  env: Record<string, string>,
  startupMs = 90_000,
): Promise<SampleProcess> {
  const child = spawn(process.execPath, ['--require', TS_REGISTER, MAIN], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', NO_COLOR: '1', SNAPSHOT_INTERVAL_MS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`sample ${name} did not start within ${startupMs} ms`)), startupMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = LISTENING.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    const onExit = (code: number | null, signal: string | null) =>
      fail(new Error(`sample ${name} exited (${signal ?? code}) before listening`));
    function fail(error: Error) {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${error.message}. Output:\n${output}`));
    }
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', onExit);
    child.once('error', fail);
  });
  child.removeAllListeners('exit');
  // Keep draining the pipes, or a chatty child would block on a full pipe.
  child.stdout.resume();
  child.stderr.resume();
  return {
    name,
    url,
    pid: child.pid!,
    kill: () => terminate(child, 'SIGKILL'),
    stop: () => terminate(child, 'SIGTERM'),
  };
}

async function terminate(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  try {
    await exited;
  } finally {
    clearTimeout(timer);
  }
}
