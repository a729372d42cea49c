import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem, type as osType } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/** Packages whose version is part of the result. */
const PACKAGES = [
  'redlock',
  '@sesamecare-oss/redlock',
  'redis-semaphore',
  'redlock-universal',
  'ioredis',
  'etcd3',
  'autocannon',
  '@nestjs/core',
  '@nestjs/common',
  '@nestjs/platform-express',
  'rxjs',
  'typescript',
];

export interface MachineInfo {
  readonly date: string;
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly os: string;
  /** 1, 5 and 15 minute load averages when the bench started: other work on the machine skews every figure. */
  readonly loadAtStart: readonly number[];
  readonly versions: Readonly<Record<string, string>>;
}

function firstLine(binary: string, args: string[]): string {
  try {
    return execFileSync(binary, args, { encoding: 'utf8' }).split('\n')[0].trim();
  } catch (error) {
    return `unknown (${(error as Error).message})`;
  }
}

function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
      .version;
  } catch {
    return 'not installed';
  }
}

export function describeMachine(): MachineInfo {
  const processors = cpus();
  const ours = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
  return {
    date: new Date().toISOString(),
    cpu: processors[0]?.model ?? 'unknown',
    cores: processors.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${osType()} ${release()}`,
    loadAtStart: loadavg(),
    versions: {
      node: process.version,
      'redis-server': firstLine('redis-server', ['--version']),
      etcd: firstLine('etcd', ['--version']),
      [`${ours.name} (this repo)`]: ours.version,
      ...Object.fromEntries(PACKAGES.map((name) => [name, packageVersion(name)])),
    },
  };
}

export function describeLoad(load: readonly number[]): string {
  return load.map((value) => value.toFixed(2)).join(' / ');
}
