import { Controller, Put } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { readSampleConfig } from '../../sample/config/sample-config';
import { DocumentStore } from '../../sample/storage/document-store';
import { StaleWriteError } from '../../sample/storage/stale-write.error';
import { StaleWriteFilter } from '../../sample/storage/stale-write.filter';

@Controller()
class StaleController {
  @Put('stale')
  write(): never {
    throw new StaleWriteError('files/a', 3n, 5n);
  }
}

describe('sample DocumentStore', () => {
  let dir: string;
  let store: DocumentStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ndl-sample-store-'));
    store = new DocumentStore(readSampleConfig({ FILES_DIR: dir }));
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('rejects a write with a lower fencing token than one already accepted', async () => {
    await store.write('files', 'a', { content: 'new holder' }, 8n);
    await expect(store.write('files', 'a', { content: 'paused old holder' }, 7n)).rejects.toBeInstanceOf(
      StaleWriteError,
    );
    expect((await store.read('files', 'a', null)).data).toEqual({ content: 'new holder' });
    // The same holder may write again with its token.
    await expect(store.write('files', 'a', { content: 'again' }, 8n)).resolves.toMatchObject({
      writes: 2,
      fencingToken: '8',
    });
  });

  it('keeps ids inside the collection directory', async () => {
    await store.write('files', '../../escape', { content: 'x' }, 1n);
    expect(await store.list('files')).toEqual(['../../escape']);
  });
});

describe('sample StaleWriteFilter', () => {
  it('answers a fencing-token rejection with 409 and the explanation', async () => {
    const moduleRef = await Test.createTestingModule({
      controllers: [StaleController],
      providers: [{ provide: APP_FILTER, useClass: StaleWriteFilter }],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const response = await request(app.getHttpServer()).put('/stale');
      expect(response.status).toBe(409);
      expect(response.body).toMatchObject({
        code: 'StaleWriteError',
        message: expect.stringContaining('token 5 was already accepted'),
      });
    } finally {
      await app.close();
    }
  });
});
