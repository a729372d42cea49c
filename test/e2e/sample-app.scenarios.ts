import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import request from 'supertest';
import { EventStream } from './support/event-stream';
import { SampleProcess, startSample } from './support/sample-process';

/** The sample's long-edit endpoint locks with ttl 3 s (renewals every second). */
const LONG_EDIT_TTL_MS = 3_000;

/**
 * The sample app's e2e scenarios, run against three app processes sharing one lock backend and one
 * FILES_DIR, the way replicas share a database.
 */
export function describeSampleApp(backend: 'redis' | 'etcd', backendEnv: () => Record<string, string>): void {
  describe(`sample app: 3 processes on ${backend}`, () => {
    const run = randomUUID().slice(0, 8);
    const id = (name: string) => `${name}-${run}`;
    let filesDir: string;
    let env: Record<string, string>;
    let apps: SampleProcess[] = [];

    beforeAll(async () => {
      filesDir = mkdtempSync(join(tmpdir(), `ndl-e2e-${backend}-`));
      env = { ...backendEnv(), FILES_DIR: filesDir, LOCK_TTL_MS: '5000', EDIT_DELAY_MS: '100' };
      const started = await Promise.allSettled(['a', 'b', 'c'].map((name) => startSample(`${backend}-${name}`, env)));
      apps = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
      const failed = started.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    }, 180_000);

    afterAll(async () => {
      await Promise.all(apps.map((app) => app.stop()));
      rmSync(filesDir, { recursive: true, force: true });
    }, 60_000);

    it('serialises concurrent writes to one file across processes, losing no update', async () => {
      const fileId = id('shared');
      const markers = apps.flatMap((app) => [0, 1, 2].map((n) => ({ app, marker: `[${app.name}:${n}]` })));
      const responses = await Promise.all(
        markers.map(({ app, marker }) => request(app.url).put(`/files/${fileId}`).send({ text: marker })),
      );
      expect(responses.map((response) => response.status)).toEqual(markers.map(() => 200));

      const final = await request(apps[0].url).get(`/files/${fileId}`);
      expect(final.body.writes).toBe(markers.length);
      for (const { marker } of markers) expect(final.body.content.split(marker)).toHaveLength(2);

      // Each write saw the previous one, and each held a newer lock: fencing tokens rise with every write.
      const byOrder = responses.map((response) => response.body).sort((x, y) => x.writes - y.writes);
      expect(byOrder.map((body) => body.writes)).toEqual(markers.map((_, index) => index + 1));
      const tokens = byOrder.map((body) => BigInt(body.fencingToken));
      for (let index = 1; index < tokens.length; index++) expect(tokens[index]).toBeGreaterThan(tokens[index - 1]);
    });

    it('runs other files in parallel, answers 409 at once for a busy one, and frees it when the client disconnects', async () => {
      const busyId = id('busy');
      const otherId = id('other');
      const stream = await EventStream.open(`${apps[0].url}/files/${busyId}/long-edit?durationMs=60000&text=never`);
      try {
        await stream.next('locked');
        const other = await request(apps[1].url).put(`/files/${otherId}`).send({ text: 'parallel' });
        expect(other.status).toBe(200);
        const busy = await request(apps[2].url).put(`/files/${busyId}/try`).send({ text: 'x' });
        expect(busy.status).toBe(409);
        expect(busy.headers['retry-after']).toBe('1');
        expect(busy.body).toMatchObject({ statusCode: 409, code: 'LockTimeoutError', key: `file:${busyId}` });
        expect(stream.events.map((event) => event.type)).not.toContain('done');
      } finally {
        stream.close();
      }
      // The disconnect cancelled the edit and released the lock: the next writer gets in, and the
      // cancelled edit never wrote.
      const after = await request(apps[2].url).put(`/files/${busyId}`).send({ text: 'after' });
      expect(after.status).toBe(200);
      expect(after.body.content).toBe('after');
    });

    it('answers 400 naming the placeholder when the id is missing', async () => {
      const response = await request(apps[1].url).post('/files/append').send({ text: 'no id' });
      expect(response.status).toBe(400);
      expect(response.body.message).toContain('<<body.id>> is missing');
    });

    it('streams the held lock’s renewals over SSE while a long edit runs', async () => {
      const fileId = id('sse');
      const stream = await EventStream.open(`${apps[1].url}/files/${fileId}/long-edit?durationMs=3500&text=streamed`);
      const locked = await stream.next('locked');
      const done = await stream.next('done');
      await stream.ended;
      const renewals = stream.events.filter((event) => event.type === 'renewed');
      expect(renewals.length).toBeGreaterThanOrEqual(2);
      renewals.forEach((event, index) => {
        expect(event.data.renewalCount).toBe(index + 1);
        expect(event.data.fencingToken).toBe(locked.data.fencingToken);
      });
      expect(done.data).toMatchObject({ content: 'streamed', fencingToken: locked.data.fencingToken });
    });

    it('frees the lock of a killed holder within its ttl', async () => {
      const fileId = id('killed');
      const victim = await startSample(`${backend}-victim`, env);
      let elapsed: number;
      let locked: { data: Record<string, unknown> };
      try {
        const stream = await EventStream.open(`${victim.url}/files/${fileId}/long-edit?durationMs=60000&text=lost`);
        locked = await stream.next('locked');
        await victim.kill();
        const killedAt = performance.now();
        const response = await request(apps[0].url).put(`/files/${fileId}`).send({ text: 'survivor' });
        elapsed = performance.now() - killedAt;
        expect(response.status).toBe(200);
        expect(response.body.content).toBe('survivor');
        expect(BigInt(response.body.fencingToken)).toBeGreaterThan(BigInt(locked.data.fencingToken as string));
      } finally {
        await victim.kill();
      }
      // At most one ttl since the last renewal, plus wake-up and the 100 ms edit; generous for a loaded machine.
      expect(elapsed).toBeLessThan(LONG_EDIT_TTL_MS + 3_000);
    }, 120_000);

    it('runs opposite transfers across processes without deadlock or lost money', async () => {
      const a = id('acct-a');
      const b = id('acct-b');
      const transfers = Array.from({ length: 6 }, (_, index) =>
        request(apps[index % apps.length].url)
          .post('/accounts/transfer')
          .send(index % 2 === 0 ? { from: a, to: b, amount: 1 } : { from: b, to: a, amount: 2 }),
      );
      const responses = await Promise.all(transfers);
      expect(responses.map((response) => response.status)).toEqual(transfers.map(() => 201));
      const [balanceA, balanceB] = await Promise.all([
        request(apps[0].url).get(`/accounts/${a}`),
        request(apps[1].url).get(`/accounts/${b}`),
      ]);
      expect(balanceA.body.balance).toBe(100 - 3 + 6);
      expect(balanceB.body.balance).toBe(100 + 3 - 6);
    });

    // Last: it stops one of the processes.
    it('elects one leader that runs the leader-only job, and hands over to another process when it stops', async () => {
      const leaderOf = async () => {
        const views = await Promise.all(
          apps.map(async (app) => ({ app, body: (await request(app.url).get('/leader')).body })),
        );
        return { views, leaders: views.filter((view) => view.body.thisInstance.isLeader) };
      };
      // Campaigns start in the background at bootstrap: wait for the first term, then for a job run.
      const first = await eventually(async () => {
        const { views, leaders } = await leaderOf();
        return leaders.length === 1 && leaders[0].body.thisInstance.job.runs > 0
          ? { views, leader: leaders[0] }
          : undefined;
      });
      const term = BigInt(first.leader.body.leader.term);
      for (const view of first.views) expect(view.body.leader).toEqual(first.leader.body.leader);
      for (const view of first.views.filter((entry) => entry !== first.leader))
        expect(view.body.thisInstance.job.runs).toBe(0);

      await first.leader.app.stop(); // SIGTERM: the app resigns on shutdown
      apps = apps.filter((app) => app !== first.leader.app);
      const next = await eventually(async () => {
        const { leaders } = await leaderOf();
        return leaders.length === 1 && leaders[0].body.thisInstance.job.runs > 0 ? leaders[0] : undefined;
      });
      expect(BigInt(next.body.leader.term)).toBeGreaterThan(term);
    }, 90_000);
  });
}

/** Polls `probe` until it returns a value; the server pushes the state change, the HTTP view of it is polled. */
async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`no result within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
