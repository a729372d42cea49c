import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { FilesService } from './files/files.service';
import { SnapshotJob } from './files/snapshot.job';

/**
 * A CLI-style entry: the locked service methods run without HTTP, against the same backend and files as the
 * server (same LOCK_BACKEND, FILES_DIR), so they queue behind edits made through the API.
 *   node dist/sample/sample/cli.js append <id> <text>
 *   node dist/sample/sample/cli.js snapshot
 */
async function main(argv: string[]): Promise<void> {
  const [command, id, text] = argv;
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  try {
    if (command === 'append' && id !== undefined) {
      const files = app.get(FilesService);
      console.log(JSON.stringify(await files.append(id, text ?? '', files.defaultThinkMs())));
    } else if (command === 'snapshot') {
      console.log(`snapshotted ${await app.get(SnapshotJob).snapshotAll()} file(s)`);
    } else {
      console.error('usage: cli.js append <id> <text> | cli.js snapshot');
      process.exitCode = 2;
    }
  } finally {
    await app.close();
  }
}

void main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
});
