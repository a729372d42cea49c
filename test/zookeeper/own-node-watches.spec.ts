import { OwnNodeWatches } from '../../lib/backends/zookeeper/own-node-watches';
import type { ZooKeeperSession } from '../../lib/backends/zookeeper/zookeeper-session';

// Only the bookkeeping: no server call is made for a node found gone (the session is never used here).
const unusedSession = {} as ZooKeeperSession;

describe('OwnNodeWatches: a node found gone by the read that set its watch', () => {
  it('tells the listeners there are, and every later one, until the entry is forgotten', async () => {
    const watches = new OwnNodeWatches(unusedSession, () => undefined);
    watches.watcherFor('/locks/a/_c_x-lock-0000000001', 'session-1');
    const early = jest.fn();
    watches.onDeleted('/locks/a/_c_x-lock-0000000001', early);
    watches.gone('/locks/a/_c_x-lock-0000000001');
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
});
