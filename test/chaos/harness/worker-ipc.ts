import { stayAlive, toParent } from '../../support/worker';
import type { ChaosParentMessage, ChaosWorkerMessage } from './worker-protocol';

/** The worker's side of the IPC channel: sending reports, and reading the parent's commands in order. */

export { leave, stopKeepingAlive } from '../../support/worker';

export function send(message: ChaosWorkerMessage): Promise<void> {
  return toParent(message);
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

stayAlive();
