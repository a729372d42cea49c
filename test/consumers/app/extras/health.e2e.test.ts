import 'reflect-metadata';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NestFactory } from '@nestjs/core';
import { HealthAppModule } from './health.module.js';

test('the terminus health check reports the Redis lock backend up', async () => {
  const app = await NestFactory.create(HealthAppModule, { logger: ['error'] });
  try {
    await app.listen(0, '127.0.0.1');
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    const response = await fetch(`${url}/health`);
    const body = await response.json();
    assert.equal(response.status, 200, JSON.stringify(body));
    assert.equal(body.info.lock.status, 'up');
    assert.equal(body.info.lock.backend, 'redis');
  } finally {
    await app.close();
  }
});
