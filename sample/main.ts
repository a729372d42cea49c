import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { SAMPLE_CONFIG, SampleConfig } from './config/sample-config';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule);
  // On SIGTERM/SIGINT, app.close() runs: LockService releases its locks and closes its backend connections.
  app.enableShutdownHooks();
  const config = app.get<SampleConfig>(SAMPLE_CONFIG);
  await app.listen(config.port, config.host);
  const url = (await app.getUrl()).replace('[::1]', 'localhost');
  Logger.log(`Listening on ${url} (lock backend: ${config.backend}, files in ${config.filesDir})`, 'Sample');
  Logger.log(`Try: curl ${url}/   (lists every route with a curl line to try it)`, 'Sample');
}

void bootstrap().catch((error: unknown) => {
  Logger.error(error instanceof Error ? (error.stack ?? error.message) : String(error), undefined, 'Sample');
  process.exitCode = 1;
});
