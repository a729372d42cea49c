import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The one redis-server and one etcd that Jest's global setup starts for a whole run.
 * Test workers are separate processes: they find the servers through these environment variables,
 * which the workers inherit from the Jest parent.
 */
export const ENV_REDIS_URL = 'TEST_REDIS_URL';
export const ENV_REDIS_PORT = 'TEST_REDIS_PORT';
export const ENV_ETCD_ENDPOINT = 'TEST_ETCD_ENDPOINT';

function fromEnv(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(
      `${name} is not set: run the tests through jest with jest.config.js, whose globalSetup starts the shared servers.`,
    );
  }
  return value;
}

/** redis://127.0.0.1:<port> of the run's shared redis-server. */
export function sharedRedisUrl(): string {
  return fromEnv(ENV_REDIS_URL);
}

/** http://127.0.0.1:<port> of the run's shared etcd. */
export function sharedEtcdEndpoint(): string {
  return fromEnv(ENV_ETCD_ENDPOINT);
}

/**
 * PID files let a later run reap servers left behind by a run that was SIGKILLed (no exit hook runs then).
 * One file per Jest parent process, so concurrent runs do not touch each other's servers.
 */
const PID_DIR = join(tmpdir(), 'ndl-test-servers');

export interface PidRecord {
  owner: number;
  servers: { pid: number; binary: string; port: number }[];
}

export function writePidFile(record: PidRecord): string {
  mkdirSync(PID_DIR, { recursive: true });
  const file = join(PID_DIR, `${record.owner}.json`);
  writeFileSync(file, JSON.stringify(record));
  return file;
}

export function removePidFile(owner: number): void {
  rmSync(join(PID_DIR, `${owner}.json`), { force: true });
}

/** Kills servers recorded by runs whose Jest process no longer exists. Checks the command line before killing. */
export function reapOrphans(): void {
  let files: string[];
  try {
    files = readdirSync(PID_DIR).filter((name) => name.endsWith('.json'));
  } catch {
    return;
  }
  for (const name of files) {
    const file = join(PID_DIR, name);
    let record: PidRecord;
    try {
      record = JSON.parse(readFileSync(file, 'utf8')) as PidRecord;
    } catch {
      rmSync(file, { force: true });
      continue;
    }
    if (isAlive(record.owner)) continue;
    for (const server of record.servers) {
      const commandLine = readCommandLine(server.pid);
      if (commandLine.includes(server.binary) && commandLine.includes(String(server.port))) {
        try {
          process.kill(server.pid, 'SIGKILL');
        } catch {
          // exited meanwhile
        }
      }
    }
    rmSync(file, { force: true });
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

function readCommandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\u0000').join(' ');
  } catch {
    return '';
  }
}
