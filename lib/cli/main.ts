import { runCli } from './run-cli';

/**
 * Entry point of `npx nest-distributed-lock` (bin/nest-distributed-lock.js). Ctrl-C ends `watch` at once: the
 * connection gets a moment to close, then the process exits with the command's code.
 */
export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    process.exitCode = await runCli(argv, { stdout: process.stdout, stderr: process.stderr, signal: stop.signal });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  // Stopped: a connection to a silent server may still be closing; do not wait for it.
  if (stop.signal.aborted) process.exit();
}

if (require.main === module) void main();
