/** What the watchdog keeps alive: one renewal attempt at a time, and how much validity is left. */
export interface Renewable {
  /** One renewal. 'retry' = a transient failure while validity remains. */
  renew(): Promise<'renewed' | 'retry' | 'lost'>;
  /** ms of validity left on the monotonic clock. */
  remaining(): number;
}

/**
 * Renews a lock every `interval` ms until stopped. Renewals never overlap: the next one is scheduled only
 * after the previous settled. Timers are unref'd so a held lock never keeps the process alive by itself.
 */
export class Watchdog {
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly target: Renewable,
    private interval: number,
  ) {}

  start(): void {
    this.schedule(this.interval);
  }

  /** Used when a manual extend changed the ttl, so the period follows it. */
  setInterval(interval: number): void {
    this.interval = interval;
    if (this.timer && !this.stopped) {
      clearTimeout(this.timer);
      this.schedule(interval);
    }
  }

  /** Stops scheduling and waits for a renewal in flight, so release never races a renewal. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight?.catch(() => undefined);
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => this.tick(), delay);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    this.timer = undefined;
    if (this.stopped) return;
    const attempt = this.target.renew();
    this.inFlight = attempt;
    let outcome: 'renewed' | 'retry' | 'lost';
    try {
      outcome = await attempt;
    } catch {
      outcome = 'retry';
    } finally {
      this.inFlight = undefined;
    }
    if (outcome === 'renewed') this.schedule(this.interval);
    // Retry sooner than the normal period, but in proportion to what is left so a short outage is ridden out.
    else if (outcome === 'retry') this.schedule(Math.min(this.interval, Math.max(25, this.target.remaining() / 4)));
  }
}
