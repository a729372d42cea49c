import { Injectable } from '@nestjs/common';
import { LockService, WithLock } from 'nest-distributed-lock';

/** Stands in for a shared resource: records whether two writers of one id ever overlapped. */
const writersInside = new Map<string, number>();

@Injectable()
export class FilesService {
  constructor(private readonly locks: LockService) {}

  /** A locked service method: the explorer wraps it, so it holds `store:<id>` while it runs. */
  @WithLock('store:<<0>>')
  async write(id: string, delayMs: number): Promise<{ overlapped: boolean; storeFencingToken: string }> {
    const inside = (writersInside.get(id) ?? 0) + 1;
    writersInside.set(id, inside);
    try {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      const storeLock = this.locks.current(`store:${id}`);
      if (!storeLock) throw new Error(`store:${id} is not held inside its @WithLock method`);
      return { overlapped: inside > 1, storeFencingToken: storeLock.fencingToken.toString() };
    } finally {
      writersInside.set(id, (writersInside.get(id) ?? 1) - 1);
    }
  }
}
