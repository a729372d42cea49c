import { parseArgs } from 'node:util';
import { CliUsageError } from '../errors/cli-usage.error';

/** Where the locks live. */
export type CliTarget =
  { readonly kind: 'redis'; readonly url: string } | { readonly kind: 'etcd'; readonly hosts: readonly string[] };

export type CliCommand =
  | { readonly command: 'help' }
  | {
      readonly command: 'inspect' | 'watch';
      readonly target: CliTarget;
      readonly key: string;
      readonly prefix: string;
      readonly json: boolean;
      /** Refresh period of `watch`, ms. */
      readonly interval: number;
      /** Deadline of each server call, ms. */
      readonly timeout: number;
    };

const DEFAULT_PREFIX = 'locks';
const DEFAULT_INTERVAL_MS = 1_000;
/** Faster refreshes only load the server; a person cannot read them anyway. */
const MIN_INTERVAL_MS = 100;
const DEFAULT_TIMEOUT_MS = 5_000;

/** Reads `argv` (without node and the script path). Throws CliUsageError with what to fix. */
export function parseCliArgs(argv: readonly string[]): CliCommand {
  let parsed: ReturnType<typeof parseWithNode>;
  try {
    parsed = parseWithNode(argv);
  } catch (error) {
    throw new CliUsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0 || positionals[0] === 'help') return { command: 'help' };

  const [command, ...rest] = positionals;
  if (command !== 'inspect' && command !== 'watch') {
    throw new CliUsageError(`Unknown command "${command}": use "inspect" or "watch".`);
  }
  if (rest.length !== 1) {
    throw new CliUsageError(
      rest.length === 0
        ? `${command} needs a KEY, e.g. ${command} --redis redis://host:6379 file:42.`
        : `${command} takes one KEY, got ${rest.length}: quote keys that contain spaces.`,
    );
  }
  return {
    command,
    target: targetOf(values.redis, values.etcd),
    key: rest[0],
    prefix: values.prefix ?? DEFAULT_PREFIX,
    json: values.json ?? false,
    interval: milliseconds('--interval', values.interval, DEFAULT_INTERVAL_MS, MIN_INTERVAL_MS),
    timeout: milliseconds('--timeout', values.timeout, DEFAULT_TIMEOUT_MS, 1),
  };
}

function parseWithNode(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      redis: { type: 'string' },
      etcd: { type: 'string' },
      prefix: { type: 'string' },
      interval: { type: 'string' },
      timeout: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

function targetOf(redis: string | undefined, etcd: string | undefined): CliTarget {
  if (redis !== undefined && etcd !== undefined) throw new CliUsageError('Pass either --redis or --etcd, not both.');
  if (redis !== undefined) {
    if (!/^rediss?:\/\/./.test(redis))
      throw new CliUsageError('--redis takes a URL such as redis://127.0.0.1:6379 (rediss:// for TLS).');
    return { kind: 'redis', url: redis };
  }
  if (etcd !== undefined) {
    const hosts = etcd
      .split(',')
      .map((host) => host.trim())
      .filter((host) => host.length > 0);
    if (hosts.length === 0)
      throw new CliUsageError('--etcd takes comma-separated endpoints such as http://127.0.0.1:2379.');
    return { kind: 'etcd', hosts };
  }
  throw new CliUsageError('Say where the locks live: --redis URL or --etcd HOSTS.');
}

function milliseconds(option: string, text: string | undefined, fallback: number, min: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min)
    throw new CliUsageError(`${option} takes a whole number of milliseconds >= ${min}, got "${text}".`);
  return value;
}
