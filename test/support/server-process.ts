import { ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { sleep } from './time';

/**
 * The one server harness: spawning, readiness, signals and reaping of the real servers the tests run against
 * (redis-server and its cluster nodes, etcd and its cluster members, ZooKeeper). Each of those is a thin
 * configuration over launchServer() (arguments and a readiness probe) and retryOnPortTaken() (free ports).
 * Every child is tracked so that an exiting process (Jest worker or the Jest parent) kills what it started,
 * even when a test failed before its afterAll ran.
 */

export const INSTALL_HINT = 'install them with `apt-get install -y redis-server etcd-server`';

/** Absolute path of `binary` on PATH, or a clear error telling how to install it (`what` says why it is needed). */
export function findBinary(binary: string, what = `The tests run against real servers: ${INSTALL_HINT}`): string {
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
  throw new Error(`${binary} is not on PATH. ${what}`);
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
  /**
   * Sends `signal` (SIGKILL to simulate a crash) if the process still runs, and waits for the exit when the
   * signal is fatal (SIGKILL, SIGTERM, SIGINT).
   */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGSTOP: the server keeps its sockets but answers nothing, like a hung host. */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
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
  const isRunning = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    pid: child.pid ?? -1,
    output: () => tail,
    exited,
    isRunning,
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (!isRunning()) return;
      child.kill(signal);
      if (FATAL_SIGNALS.has(signal)) await exited;
    },
    pause: () => void (isRunning() && child.kill('SIGSTOP')),
    resume: () => void (isRunning() && child.kill('SIGCONT')),
    ownTempDir: (dir) => tracked.tempDirs.add(dir),
    forget: () => live.delete(tracked),
  };
}

/** What every test server hands its test, whichever server it runs. */
export interface ServerControls {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** -1 while it is down. */
  readonly pid: number;
  /** Graceful stop; removes the data dir. Idempotent. */
  stop(): Promise<void>;
  /** Sends a signal (SIGKILL to simulate a crash) and waits for the exit when the signal is fatal. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGSTOP: the server keeps its sockets but answers nothing, like a hung host. */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
}

const FATAL_SIGNALS: ReadonlySet<NodeJS.Signals> = new Set(['SIGKILL', 'SIGTERM', 'SIGINT']);

/** How to start one server process and tell that it serves. */
export interface LaunchPlan {
  /** Names it in errors, e.g. `redis-server on 127.0.0.1:40123`. */
  readonly what: string;
  readonly binary: string;
  readonly args: readonly string[];
  /** Resolves true once the server serves; a rejection counts as "not yet". */
  probe(): Promise<boolean>;
  readonly readyTimeoutMs?: number;
  /** A data dir removed with the process should this process exit first; the caller removes it otherwise. */
  readonly dir?: string;
  /** Learns of the process before it is ready, so that a concurrent stop can reach it. */
  onSpawn?(server: SpawnedServer): void;
}

/** Spawns a server and waits until its probe passes; stops it again (and rethrows) when it does not. */
export async function launchServer(plan: LaunchPlan): Promise<SpawnedServer> {
  const server = spawnServer(plan.binary, [...plan.args]);
  if (plan.dir) server.ownTempDir(plan.dir);
  plan.onSpawn?.(server);
  try {
    await waitUntilReady(server, plan.what, () => plan.probe(), plan.readyTimeoutMs);
    return server;
  } catch (error) {
    await stopServer(server);
    server.forget();
    throw error;
  }
}

/** A graceful stop, then the server is no longer tracked. */
export async function retireServer(server: SpawnedServer | undefined): Promise<void> {
  if (!server) return;
  await stopServer(server);
  server.forget();
}

const START_ATTEMPTS = 5;

/**
 * Runs `start` again when it failed because another process took a port between freeTestPorts() and the
 * server's bind; `start` picks new ports each time.
 */
export async function retryOnPortTaken<T>(start: () => Promise<T>, attempts = START_ATTEMPTS): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (error instanceof ServerExitedError && error.portTaken && attempt < attempts) continue;
      throw error;
    }
  }
}

/** A fresh temp dir for one server (`ndl-<name>-…`). */
export function serverDir(name: string): string {
  return mkdtempSync(join(tmpdir(), `ndl-${name}-`));
}

/** Removes a server's temp dir. */
export function removeServerDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
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

/** The servers must not pick up a developer's ETCD_* settings (they would override our flags). */
function serverEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('ETCD_')) env[name] = value;
  }
  return env;
}
