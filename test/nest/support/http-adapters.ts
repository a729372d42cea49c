import type { INestApplication, NestApplicationOptions } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { TestingModule } from '@nestjs/testing';

/** The HTTP platforms Nest ships: the HTTP suites run on each, since their request and response objects differ. */
export const HTTP_PLATFORMS = ['express', 'fastify'] as const;
export type HttpPlatform = (typeof HTTP_PLATFORMS)[number];

/** A Nest app on `platform`. Call `ready()` after `init()` when requests go to getHttpServer() without listen(). */
export function createHttpApp(
  moduleRef: TestingModule,
  platform: HttpPlatform,
  options: NestApplicationOptions = {},
): INestApplication {
  return platform === 'fastify'
    ? moduleRef.createNestApplication(new FastifyAdapter(), options)
    : moduleRef.createNestApplication(options);
}

/** Fastify answers requests only once its plugins have loaded (listen() waits for that itself). */
export async function ready(app: INestApplication): Promise<void> {
  const instance = app.getHttpAdapter().getInstance() as { ready?: () => Promise<unknown> };
  await instance.ready?.();
}

/** The Node response under a platform's response object: Express's is one, Fastify's reply has it as `raw`. */
export function nodeResponse(response: unknown): { once(event: string, listener: () => void): void } {
  const reply = response as { raw?: unknown };
  return (reply.raw ?? response) as { once(event: string, listener: () => void): void };
}
