import { getEventListeners } from 'node:events';
import type { Leadership } from '../../lib';
import { LeaderJob } from '../../sample/leader/leader.job';
import { eventually } from '../support/time';

describe('sample LeaderJob', () => {
  it('keeps at most one abort listener on its stop signal however many runs it makes, and ends when stopped', async () => {
    const job = new LeaderJob();
    const stop = new AbortController();
    const leading = job.lead({ term: 3n } as Leadership, stop.signal);
    try {
      // A run every 2 s: the third run means two waits ended by their timer.
      await eventually(() => job.current.runs >= 3, 'three runs of the job', 20_000);
      expect(getEventListeners(stop.signal, 'abort').length).toBeLessThanOrEqual(1);
      expect(job.current.lastTerm).toBe('3');
    } finally {
      stop.abort();
      await leading;
    }
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  }, 30_000);
});
