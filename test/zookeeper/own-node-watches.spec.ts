import { OwnNodeWatches } from '../../lib/backends/zookeeper/own-node-watches';
import type { ZooKeeperSession } from '../../lib/backends/zookeeper/zookeeper-session';
import type { Event as ZkEvent } from 'node-zookeeper-client';

// node-zookeeper-client's Event.NODE_DELETED.
const NODE_DELETED = 2;

// Only the bookkeeping: no server call is made for a node found gone (the session is never used here).
const unusedSession = {} as ZooKeeperSession;

describe('OwnNodeWatches: a deletion reaches every listener, also one that subscribes after it', () => {
  it('tells the listeners there are, and every later one, until the entry is forgotten', async () => {
    const watches = new OwnNodeWatches(unusedSession, () => undefined);
    const watcher = watches.watcherFor('/locks/a/_c_x-lock-0000000001', 'session-1');
    const early = jest.fn();
    watches.onDeleted('/locks/a/_c_x-lock-0000000001', early);
    watcher({ getType: () => NODE_DELETED } as ZkEvent);
    expect(early).toHaveBeenCalledTimes(1);

    // The handle observes after the grant, possibly after the read came back: it still hears of the loss.
    const late = await new Promise<string>((resolve) =>
      watches.onDeleted('/locks/a/_c_x-lock-0000000001', () => resolve('told')),
    );
    expect(late).toBe('told');
    const unsubscribed = jest.fn();
    watches.onDeleted('/locks/a/_c_x-lock-0000000001', unsubscribed)();
    await Promise.resolve();
    expect(unsubscribed).not.toHaveBeenCalled();

    watches.forget('/locks/a/_c_x-lock-0000000001');
    expect(watches.size).toBe(0);
    expect(early).toHaveBeenCalledTimes(1);
  });

  it('keeps a deletion its watch reported before anyone listened, for the handle that observes after the grant', async () => {
    const watches = new OwnNodeWatches(unusedSession, () => undefined);
    const path = '/locks/b/_c_y-lock-0000000007';
    const watcher = watches.watcherFor(path, 'session-1');
    watcher({ getType: () => NODE_DELETED } as ZkEvent);

    const told = await new Promise<string>((resolve) => watches.onDeleted(path, () => resolve('told')));
    expect(told).toBe('told');
    // Its owner ends the entry when it releases (see remove()) or gives the node up.
    watches.forget(path);
    expect(watches.size).toBe(0);
    const afterForget = jest.fn();
    watches.onDeleted(path, afterForget);
    await Promise.resolve();
    expect(afterForget).not.toHaveBeenCalled();
  });
});
