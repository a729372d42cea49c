import type { ChaosParentMessage, ChaosWorkerMessage } from './worker-protocol';

/** The worker's side of the IPC channel: sending reports, and reading the parent's commands in order. */

export function send(message: ChaosWorkerMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!process.send) return reject(new Error('chaos-worker must be started with child_process.fork'));
    process.send(message, (error: Error | null) => (error ? reject(error) : resolve()));
  });
}

const inbox: ChaosParentMessage[] = [];
const inboxListeners = new Set<() => void>();
process.on('message', (message: ChaosParentMessage) => {
  inbox.push(message);
  for (const listener of [...inboxListeners]) listener();
});

type ParentMessageOf<T extends ChaosParentMessage['type']> = Extract<ChaosParentMessage, { type: T }>;

/** The next parent message of one of `types` (others stay queued for their own readers). */
export function next<T extends ChaosParentMessage['type']>(...types: T[]): Promise<ParentMessageOf<T>> {
  return new Promise((resolve) => {
    const check = () => {
      const index = inbox.findIndex((message) => (types as string[]).includes(message.type));
      if (index < 0) return;
      inboxListeners.delete(check);
      resolve(inbox.splice(index, 1)[0] as ParentMessageOf<T>);
    };
    inboxListeners.add(check);
    check();
  });
}

/** A queued parent message of `type`, if one arrived; never waits. */
export function take<T extends ChaosParentMessage['type']>(type: T): ParentMessageOf<T> | undefined {
  const index = inbox.findIndex((message) => message.type === type);
  return index < 0 ? undefined : (inbox.splice(index, 1)[0] as ParentMessageOf<T>);
}

/**
 * The library's timers are unref'd, and a child's IPC channel only holds the process open while it has
 * 'message' listeners; this keeps the worker alive while it works.
 */
const keepAlive = setInterval(() => undefined, 1_000);
let leaving = false;

// The parent died (even by SIGKILL): do not linger as an orphan.
process.on('disconnect', () => {
  if (!leaving) process.exit(2);
});

/** Drops the worker's own keep-alive timer, so that what stays open afterwards is only the library's. */
export function stopKeepingAlive(): void {
  clearInterval(keepAlive);
}

/** Done: closes the IPC channel; the process then exits once nothing else keeps it alive. */
export function leave(): void {
  leaving = true;
  stopKeepingAlive();
  process.removeAllListeners('message');
  process.disconnect();
}
