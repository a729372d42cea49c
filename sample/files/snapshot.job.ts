import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { LockTimeoutError } from '../../lib';
import { SAMPLE_CONFIG, SampleConfig } from '../config/sample-config';
import { FilesService } from './files.service';

/**
 * A timer that snapshots every file through the locked FilesService.snapshot(): provider methods are
 * locked too, not only HTTP handlers. Started after bootstrap, when the explorer has wrapped them.
 */
@Injectable()
export class SnapshotJob implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(SnapshotJob.name);
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private readonly files: FilesService,
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.snapshotIntervalMs === 0) return;
    this.timer = setInterval(() => {
      this.running ??= this.snapshotAll()
        .then(
          () => undefined,
          (error: unknown) => this.logger.warn(`Snapshot round failed: ${String(error)}`),
        )
        .finally(() => (this.running = undefined));
    }, this.config.snapshotIntervalMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  async snapshotAll(): Promise<number> {
    let count = 0;
    for (const id of await this.files.list()) {
      try {
        await this.files.snapshot(id);
        count += 1;
      } catch (error) {
        if (error instanceof LockTimeoutError) continue; // being edited: next round
        this.logger.warn(`Snapshot of ${id} failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    return count;
  }
}
