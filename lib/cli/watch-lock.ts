import { delay, raceAbort } from '../utils/abort';
import { InvalidLockKeyError, LockNotSupportedError } from '../errors';
import type { LockService } from '../lock.service';
import { toJson } from '../utils/json';
import { describeError } from '../utils/redact';
import { formatDuration } from './format-duration';
import { formatInspection } from './format-inspection';

/** Clear the screen and go home, like `watch(1)`. */
const CLEAR_SCREEN = '\u001b[2J\u001b[H';

export interface WatchOptions {
  readonly interval: number;
  /** One JSON document per line instead of a redrawn table. */
  readonly json: boolean;
  /** Aborted on Ctrl-C. */
  readonly signal?: AbortSignal;
  readonly out: { write(text: string): unknown; isTTY?: boolean };
  readonly now: () => number;
  /** Called after each frame is written (tests wait on it instead of sleeping). */
  readonly onFrame?: (frame: number) => void;
}

/** Why an inspection stopped: Ctrl-C came while it waited for the server. */
const STOPPED = Symbol('stopped');

/**
 * Re-inspects `key` every `interval` ms until the signal aborts. A server error is shown in the frame and the
 * watch goes on (the server may be restarting); an error that retrying cannot fix ends it. Ctrl-C ends it at
 * once, also while an inspection waits for a silent server. Resolves whether the last frame showed the lock
 * (false: it showed a server error, and the command exits with 1).
 */
export async function watchLock(locks: LockService, key: string, options: WatchOptions): Promise<boolean> {
  const redraw = options.out.isTTY === true && !options.json;
  let lastFrameOk = true;
  for (let frame = 1; !options.signal?.aborted; frame += 1) {
    let body: string;
    try {
      const inspecting = locks.inspect(key);
      const inspection = options.signal ? await raceAbort(inspecting, options.signal, () => STOPPED) : await inspecting;
      body = options.json ? JSON.stringify(toJson(inspection)) : formatInspection(inspection, options.now());
      lastFrameOk = true;
    } catch (error) {
      if (error === STOPPED) break;
      if (error instanceof LockNotSupportedError || error instanceof InvalidLockKeyError) throw error;
      body = options.json ? JSON.stringify({ error: describeError(error) }) : `! ${describeError(error)}`;
      lastFrameOk = false;
    }
    if (options.json) {
      options.out.write(`${body}\n`);
    } else {
      const header = `Every ${formatDuration(options.interval)}: watching "${key}" (Ctrl-C to stop)`;
      options.out.write(redraw ? `${CLEAR_SCREEN}${header}\n\n${body}\n` : `${header}\n\n${body}\n\n`);
    }
    options.onFrame?.(frame);
    try {
      await delay(options.interval, options.signal);
    } catch {
      break;
    }
  }
  return lastFrameOk;
}
