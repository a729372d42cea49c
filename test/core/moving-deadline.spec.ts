import { monotonicNow } from '../../lib/utils/clock';
import { withMovingDeadline } from '../../lib/utils/deadline';

const answerAfter = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

describe('withMovingDeadline', () => {
  it('rejects with the timeout error once the deadline passes unmoved', async () => {
    const timeout = new Error('too late');
    const deadline = monotonicNow() + 50;
    await expect(
      withMovingDeadline(
        answerAfter(1_000, 'late'),
        () => deadline,
        () => timeout,
      ),
    ).rejects.toBe(timeout);
  });

  it('waits on when the deadline moved later before the timer fired, and gives the answer', async () => {
    let deadline = monotonicNow() + 50;
    // Moved while the work runs, as a renewal beside it would move the validity.
    setTimeout(() => (deadline = monotonicNow() + 5_000), 10);
    await expect(
      withMovingDeadline(
        answerAfter(300, 'answer'),
        () => deadline,
        () => new Error('too late'),
      ),
    ).resolves.toBe('answer');
  });

  it('passes the work’s own error on, and rejects at once when the deadline has already passed', async () => {
    const failure = new Error('refused');
    await expect(
      withMovingDeadline(
        Promise.reject(failure),
        () => monotonicNow() + 1_000,
        () => new Error('x'),
      ),
    ).rejects.toBe(failure);
    const timeout = new Error('no time left');
    await expect(
      withMovingDeadline(
        answerAfter(10, 'late'),
        () => monotonicNow() - 1,
        () => timeout,
      ),
    ).rejects.toBe(timeout);
  });
});
