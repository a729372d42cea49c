import { Inject, Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockService, WithLock } from '../../lib';
import { SAMPLE_CONFIG, SampleConfig } from '../config/sample-config';
import { DocumentStore } from '../storage/document-store';
import { FileContent, FileView, toFileView } from './file-view';

const FILES = 'files';
const SNAPSHOTS = 'snapshots';

@Injectable()
export class FilesService {
  constructor(
    private readonly store: DocumentStore,
    private readonly locks: LockService,
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
  ) {}

  async get(id: string): Promise<FileView> {
    return toFileView(await this.store.read<FileContent>(FILES, id, { content: '' }));
  }

  /**
   * A slow read-modify-write. Locked on the same key as the HTTP handlers that call it: there it reuses the
   * request's lock (reentrancy); called from the CLI or a job it takes the lock itself.
   */
  @WithLock('file:<<id>>')
  async append(id: string, text: string, thinkMs: number, cancel?: AbortSignal): Promise<FileView> {
    const lock = this.locks.current()!;
    // Stop, without writing, if the lock is lost (LockLostError) or the caller gives up (client disconnected).
    const stop = cancel ? AbortSignal.any([lock.signal, cancel]) : lock.signal;
    const current = await this.store.read<FileContent>(FILES, id, { content: '' });
    await sleep(thinkMs, undefined, { signal: stop });
    stop.throwIfAborted();
    const written = await this.store.write<FileContent>(
      FILES,
      id,
      { content: current.data.content + text },
      lock.fencingToken,
    );
    return toFileView(written);
  }

  /** Copies a file to the snapshots collection. Skips a file being edited rather than waiting for it. */
  @WithLock('file:<<id>>', { waitTimeout: 0 })
  async snapshot(id: string): Promise<void> {
    const lock = this.locks.current()!;
    const current = await this.store.read<FileContent>(FILES, id, { content: '' });
    await this.store.write(SNAPSHOTS, id, current.data, lock.fencingToken);
  }

  list(): Promise<string[]> {
    return this.store.list(FILES);
  }

  defaultThinkMs(): number {
    return this.config.editDelayMs;
  }
}
