import { ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, rmSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Spawning and reaping of the real servers the tests run against (redis-server, etcd).
 * Every child is tracked so that an exiting process (Jest worker or the Jest parent) kills what it started,
 * even when a test failed before its afterAll ran.
 */

export const INSTALL_HINT = 'install them with `apt-get install -y redis-server etcd-server`';

/** Absolute path of `binary` on PATH, or a clear error telling how to install it. */
export function findBinary(binary: string): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, binary);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  throw new Error(`${binary} is not on PATH. The tests run against real servers: ${INSTALL_HINT}`);
}

interface Tracked {
  child: ChildProcess;
  tempDirs: Set<string>;
}

const live = new Set<Tracked>();
let exitHookInstalled = false;

/** SIGKILLs every server this process started and removes their temp dirs. Synchronous, so it works in 'exit'. */
export function killAllServersSync(): void {
  for (const tracked of live) {
    try {
      if (tracked.child.exitCode === null && tracked.child.signalCode === null) tracked.child.kill('SIGKILL');
    } catch {
      // already gone
    }
    for (const dir of tracked.tempDirs) rmSync(dir, { recursive: true, force: true });
  }
  live.clear();
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', killAllServersSync);
}

export interface SpawnedServer {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Last lines the server printed, for error messages. */
  output(): string;
  /** Resolves with the exit code/signal once the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  isRunning(): boolean;
  /** Removes the temp dir when the server is gone for good. */
  ownTempDir(dir: string): void;
  /** Stops tracking (after a clean stop). */
  forget(): void;
}

export function spawnServer(binary: string, args: string[]): SpawnedServer {
  installExitHook();
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'], env: serverEnv() });
  const tracked: Tracked = { child, tempDirs: new Set() };
  live.add(tracked);
  let tail = '';
  const collect = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4000);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => {
      collect(Buffer.from(String(error)));
      resolve({ code: -1, signal: null });
    });
  });
  // Output pipes must not keep a Jest worker alive on their own.
  (child.stdout as unknown as { unref?: () => void }).unref?.();
  (child.stderr as unknown as { unref?: () => void }).unref?.();
  return {
    child,
    pid: child.pid ?? -1,
    output: () => tail,
    exited,
    isRunning: () => child.exitCode === null && child.signalCode === null,
    ownTempDir: (dir) => tracked.tempDirs.add(dir),
    forget: () => live.delete(tracked),
  };
}

/** Graceful stop: SIGTERM (and SIGCONT in case it is paused), SIGKILL if it does not exit in time. */
export async function stopServer(server: SpawnedServer, graceMs = 5_000): Promise<void> {
  if (server.isRunning()) {
    server.child.kill('SIGTERM');
    server.child.kill('SIGCONT');
    const timer = setTimeout(() => server.isRunning() && server.child.kill('SIGKILL'), graceMs);
    timer.unref();
    await server.exited;
    clearTimeout(timer);
  }
}

/** Polls `probe` until it resolves true, failing early when the server exits or after `timeoutMs`. */
export async function waitUntilReady(
  server: SpawnedServer,
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (!server.isRunning()) {
      const { code, signal } = await server.exited;
      throw new ServerExitedError(what, code, signal, server.output());
    }
    try {
      if (await probe()) return;
    } catch (error) {
      lastError = error;
    }
    await sleep(50);
  }
  throw new Error(
    `${what} did not become ready within ${timeoutMs} ms (last probe error: ${String(lastError)}). Output:\n${server.output()}`,
  );
}

export class ServerExitedError extends Error {
  override readonly name = 'ServerExitedError';
  constructor(
    what: string,
    readonly code: number | null,
    readonly signal: NodeJS.Signals | null,
    readonly output: string,
  ) {
    super(`${what} exited during start-up (code ${code}, signal ${signal}). Output:\n${output}`);
  }

  /** The port was taken between freeTestPorts() and the server's bind: worth retrying with another port. */
  get portTaken(): boolean {
    return /address already in use|bind: address/i.test(this.output);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** The servers must not pick up a developer's ETCD_* settings (they would override our flags). */
function serverEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('ETCD_')) env[name] = value;
  }
  return env;
}
