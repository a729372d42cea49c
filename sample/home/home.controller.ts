import { Controller, Get, Header, Headers, Inject } from '@nestjs/common';
import { SAMPLE_CONFIG, SampleConfig } from '../config/sample-config';

interface SampleRoute {
  readonly route: string;
  readonly what: string;
  /** The curl command, with `$URL` standing for this app's address. */
  readonly curl: string;
}

/** Every route of the sample, in the order a newcomer would try them. */
export const SAMPLE_ROUTES: readonly SampleRoute[] = [
  { route: 'GET /', what: 'this list', curl: 'curl $URL/' },
  {
    route: 'PUT /files/:id',
    what: 'append text under @WithLock("file:<<id>>"); concurrent writes queue, none is lost',
    curl: `curl -X PUT $URL/files/readme -H 'content-type: application/json' -d '{"text":"hello "}'`,
  },
  {
    route: 'GET /files/:id',
    what: 'read a file (content, writes, last fencing token)',
    curl: 'curl $URL/files/readme',
  },
  {
    route: 'PUT /files/:id/try',
    what: 'the same without waiting: 409 with Retry-After while someone else edits the file',
    curl: `curl -i -X PUT $URL/files/readme/try -H 'content-type: application/json' -d '{"text":"again "}'`,
  },
  {
    route: 'POST /files/append',
    what: 'the key from the body (<<body.id>>); without an id: 400 naming the placeholder',
    curl: `curl -i -X POST $URL/files/append -H 'content-type: application/json' -d '{"text":"no id"}'`,
  },
  {
    route: 'GET /files/:id/long-edit',
    what: 'Server-Sent Events: the held lock and each watchdog renewal while a long edit runs',
    curl: 'curl -N "$URL/files/readme/long-edit?text=slow%20&durationMs=3000"',
  },
  {
    route: 'POST /accounts/transfer',
    what: 'two keys in sorted order, so opposite transfers cannot deadlock',
    curl: `curl -X POST $URL/accounts/transfer -H 'content-type: application/json' -d '{"from":"alice","to":"bob","amount":5}'`,
  },
  { route: 'GET /accounts/:id', what: 'an account balance', curl: 'curl $URL/accounts/alice' },
  {
    route: 'GET /leader',
    what: 'who leads the sample election, and the job only the leader runs (every 2 s)',
    curl: 'curl $URL/leader',
  },
  { route: 'GET /health', what: 'terminus health check of the lock backend', curl: 'curl $URL/health' },
  {
    route: 'GET /admin/locks/:key',
    what: 'who holds a key (needs ADMIN_TOKEN set when the app starts)',
    curl: `curl $URL/admin/locks/file:readme -H "x-admin-token: $ADMIN_TOKEN"`,
  },
];

@Controller()
export class HomeController {
  constructor(@Inject(SAMPLE_CONFIG) private readonly config: SampleConfig) {}

  /** A plain-text list of the routes with a curl line each, for the first `curl localhost:3000`. */
  @Get()
  @Header('content-type', 'text/plain; charset=utf-8')
  routes(@Headers('host') host: string | undefined): string {
    const url = `http://${host ?? `127.0.0.1:${this.config.port}`}`;
    const lines = SAMPLE_ROUTES.flatMap((entry) => [
      `${entry.route}  ${entry.what}`,
      `  ${entry.curl.replaceAll('$URL', url)}`,
      '',
    ]);
    return [`nest-distributed-lock sample (lock backend: ${this.config.backend})`, '', ...lines].join('\n');
  }
}
