import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { AppModule } from '../../sample/app.module';
import { SAMPLE_ROUTES } from '../../sample/home/home.controller';

/** What one curl line of `GET /` asks for. */
function parseCurl(curl: string): { method: string; path: string; headers: Record<string, string>; body?: string } {
  const path = /\$URL([^\s"']*)/.exec(curl)?.[1] ?? '';
  const method = /-X (\w+)/.exec(curl)?.[1] ?? 'GET';
  const headers = Object.fromEntries(
    [...curl.matchAll(/-H ['"]([^:]+): ([^'"]*)['"]/g)].map(([, name, value]) => [name.toLowerCase(), value]),
  );
  const body = /-d '([^']*)'/.exec(curl)?.[1];
  return { method, path, headers, body };
}

describe('sample GET /', () => {
  const env = { FILES_DIR: process.env.FILES_DIR, ADMIN_TOKEN: process.env.ADMIN_TOKEN };
  let dir: string;
  let app: INestApplication;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ndl-sample-home-'));
    Object.assign(process.env, { FILES_DIR: dir, ADMIN_TOKEN: 'secret' });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
    for (const [name, value] of Object.entries(env)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists every route with a curl line that uses this host', async () => {
    const response = await request(app.getHttpServer()).get('/').set('host', 'example.test:3000');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    for (const entry of SAMPLE_ROUTES) {
      expect(response.text).toContain(entry.route);
      expect(response.text).toContain(entry.curl.replaceAll('$URL', 'http://example.test:3000'));
    }
  });

  it.each(SAMPLE_ROUTES.map((entry) => [entry.route, entry.curl]))(
    '%s: its curl line reaches a route',
    async (_route, curl) => {
      const { method, path, headers, body } = parseCurl(curl.replaceAll('$ADMIN_TOKEN', 'secret'));
      let call = request(app.getHttpServer())[method.toLowerCase() as 'get' | 'put' | 'post'](path);
      for (const [name, value] of Object.entries(headers)) call = call.set(name, value);
      const response = await (body === undefined ? call : call.send(body));
      expect(response.status).not.toBe(404);
      expect(response.status).toBeLessThan(500);
    },
  );
});
