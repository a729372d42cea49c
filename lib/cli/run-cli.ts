import { toJson } from '../utils/json';
import { InvalidLockKeyError } from '../errors';
import type { LockService } from '../lock.service';
import { describeError } from '../utils/redact';
import { CliUsageError } from '../errors/cli-usage.error';
import { formatInspection } from './format-inspection';
import { openTarget, type TargetOptions } from './open-target';
import { parseCliArgs, type CliTarget } from './parse-args';
import { USAGE } from './usage';
import { watchLock } from './watch-lock';

export interface CliIo {
  readonly stdout: { write(text: string): unknown; isTTY?: boolean };
  readonly stderr: { write(text: string): unknown };
  /** Aborted on Ctrl-C: ends `watch`. */
  readonly signal?: AbortSignal;
  /** Opens the lock service for a target. Default: a Redis or etcd backend; tests pass their own. */
  readonly open?: (target: CliTarget, options: TargetOptions) => LockService;
  readonly now?: () => number;
  readonly env?: NodeJS.ProcessEnv;
  readonly onFrame?: (frame: number) => void;
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** Runs one command line and resolves its exit code. Never throws; errors are written to stderr. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let command: ReturnType<typeof parseCliArgs>;
  try {
    command = parseCliArgs(argv);
  } catch (error) {
    if (!(error instanceof CliUsageError)) throw error;
    io.stderr.write(`${error.message}\n\n${USAGE}\n`);
    return EXIT_USAGE;
  }
  if (command.command === 'help') {
    io.stdout.write(`${USAGE}\n`);
    return EXIT_OK;
  }

  let locks: LockService;
  try {
    locks = (io.open ?? openTarget)(command.target, {
      prefix: command.prefix,
      timeout: command.timeout,
      ...(io.env && { env: io.env }),
    });
  } catch (error) {
    // Configuration the server never saw: an invalid --prefix, a missing client package.
    io.stderr.write(`${describeError(error)}\n`);
    return error instanceof TypeError ? EXIT_USAGE : EXIT_FAILED;
  }
  const now = io.now ?? Date.now;
  try {
    if (command.command === 'inspect') {
      const inspection = await locks.inspect(command.key);
      io.stdout.write(
        `${command.json ? JSON.stringify(toJson(inspection), null, 2) : formatInspection(inspection, now())}\n`,
      );
    } else {
      const lastFrameOk = await watchLock(locks, command.key, {
        interval: command.interval,
        json: command.json,
        out: io.stdout,
        now,
        ...(io.signal && { signal: io.signal }),
        ...(io.onFrame && { onFrame: io.onFrame }),
      });
      if (!lastFrameOk) return EXIT_FAILED;
    }
    return EXIT_OK;
  } catch (error) {
    io.stderr.write(`${describeError(error)}\n`);
    return error instanceof InvalidLockKeyError ? EXIT_USAGE : EXIT_FAILED;
  } finally {
    const closing = locks.close().catch(() => undefined);
    // After Ctrl-C, a silent server must not hold the exit: close what answers within a moment.
    await (io.signal?.aborted ? Promise.race([closing, sleep(CLOSE_AFTER_STOP_MS)]) : closing);
  }
}

/** How long a stopped command waits for its connections to close. */
const CLOSE_AFTER_STOP_MS = 1_000;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
