import { Inject, Injectable } from '@nestjs/common';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SAMPLE_CONFIG, SampleConfig } from '../config/sample-config';
import { StaleWriteError } from './stale-write.error';

export interface StoredDocument<T> {
  readonly id: string;
  readonly data: T;
  /** The fencing token of the last accepted write, as a decimal string (JSON has no bigint). */
  readonly fencingToken: string | null;
  readonly writes: number;
}

/**
 * JSON documents in a directory, so several app processes share them. Nothing here serialises writers:
 * that is the lock's job. What the store does check is the fencing token, the one safeguard a lock
 * cannot give: a writer that was paused past its lock's ttl is refused instead of overwriting newer data.
 * (A real store makes the check and the write one atomic step, e.g. a conditional UPDATE; files cannot.)
 */
@Injectable()
export class DocumentStore {
  constructor(@Inject(SAMPLE_CONFIG) private readonly config: SampleConfig) {}

  async read<T>(collection: string, id: string, initial: T): Promise<StoredDocument<T>> {
    try {
      return JSON.parse(await readFile(this.path(collection, id), 'utf8')) as StoredDocument<T>;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      return { id, data: initial, fencingToken: null, writes: 0 };
    }
  }

  /** Replaces the document, unless a write with a higher fencing token was accepted already. */
  async write<T>(collection: string, id: string, data: T, fencingToken: bigint): Promise<StoredDocument<T>> {
    const current = await this.read<unknown>(collection, id, null);
    if (current.fencingToken !== null && BigInt(current.fencingToken) > fencingToken) {
      throw new StaleWriteError(`${collection}/${id}`, fencingToken, BigInt(current.fencingToken));
    }
    const next: StoredDocument<T> = { id, data, fencingToken: fencingToken.toString(), writes: current.writes + 1 };
    const file = this.path(collection, id);
    await mkdir(join(this.config.filesDir, collection), { recursive: true });
    // Write then rename: a reader in another process sees the old or the new document, never half of one.
    const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(temporary, JSON.stringify(next));
    await rename(temporary, file);
    return next;
  }

  async list(collection: string): Promise<string[]> {
    try {
      const names = await readdir(join(this.config.filesDir, collection));
      return names
        .filter((name) => name.endsWith('.json'))
        .map((name) => decodeURIComponent(name.slice(0, -'.json'.length)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  }

  private path(collection: string, id: string): string {
    // Encoded, so an id like "../x" names a file inside the collection, not a path.
    return join(this.config.filesDir, collection, `${encodeURIComponent(id)}.json`);
  }
}
