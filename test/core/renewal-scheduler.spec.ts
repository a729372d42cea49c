import { RenewalScheduler, ScheduledRenewal } from '../../lib/watchdog/renewal-scheduler';
import { LIST_SLOT } from '../../lib/utils/slot-list';

/** A renewal that records when it fired. */
function renewal(name: string, fired: string[], onFire?: () => void): ScheduledRenewal {
  return {
    [LIST_SLOT]: -1,
    dueAt: Infinity,
    slack: 0,
    fire: () => {
      fired.push(name);
      onFire?.();
    },
  };
}

describe('RenewalScheduler', () => {
  it('fires the renewals due in one tick most urgent first, whatever order they were scheduled in', async () => {
    const scheduler = new RenewalScheduler();
    const fired: string[] = [];
    const done = new Promise<void>((resolve) => {
      const names = ['late', 'early', 'middle'];
      const delays = [60, 20, 40];
      // A period of 1 s gives 100 ms of slack: when 'early' is due, the other two are close enough to join it.
      names.forEach((name, index) =>
        scheduler.schedule(
          renewal(name, fired, () => fired.length === 3 && resolve()),
          delays[index],
          1_000,
        ),
      );
    });
    await done;
    expect(fired).toEqual(['early', 'middle', 'late']);
    expect(scheduler.size).toBe(0);
  });

  it('does not fire a cancelled renewal, and keeps the others', async () => {
    const scheduler = new RenewalScheduler();
    const fired: string[] = [];
    const kept = new Promise<void>((resolve) => scheduler.schedule(renewal('kept', fired, resolve), 30, 50));
    const cancelled = renewal('cancelled', fired);
    scheduler.schedule(cancelled, 10, 50);
    scheduler.cancel(cancelled);
    expect(scheduler.size).toBe(1);
    await kept;
    expect(fired).toEqual(['kept']);
  });

  it('moves a renewal scheduled again instead of holding it twice', async () => {
    const scheduler = new RenewalScheduler();
    const fired: string[] = [];
    const done = new Promise<void>((resolve) => {
      const again = renewal('again', fired, resolve);
      scheduler.schedule(again, 5_000, 10_000);
      scheduler.schedule(again, 10, 10_000);
    });
    expect(scheduler.size).toBe(1);
    await done;
    expect(fired).toEqual(['again']);
  });
});
