/**
 * A contender process for the hot-key and cross-process scenarios (forked by hot-key.ts, cross-process.ts): its own client, `contenders` loops on
 * the shared key, records sent back to the parent.
 */
import { sleep, wallNow } from '../lib/clock';
import { fromParent, runWorker, toParent, workerPayload } from '../lib/fork';
import type { GrantRecord } from '../lib/grants';
import type { BenchEnv } from '../peers/adapter';
import { adapterNamed } from '../peers/registry';
import { contendAll } from './contender';

export interface HotKeyWorkerPayload {
  readonly adapter: string;
  readonly env: BenchEnv;
  readonly key: string;
  readonly ttl: number;
  readonly contenders: number;
  /** How many 'go' windows to run before closing (default 1): the cross-process scenario runs one per round. */
  readonly windows?: number;
}

export type HotKeyWorkerMessage =
  | { readonly type: 'ready' }
  | {
      readonly type: 'go';
      readonly start: number;
      readonly until: number;
      readonly maxGrants: number;
      readonly thinkMs: number;
      readonly holdMs?: number;
    }
  | { readonly type: 'done'; readonly records: GrantRecord[] };

runWorker(async () => {
  const payload = workerPayload<HotKeyWorkerPayload>();
  const adapter = await adapterNamed(payload.adapter).create(payload.env, { ttl: payload.ttl });
  try {
    // One uncontended cycle on another key: connected, scripts loaded, before the clock starts.
    await adapter.release(await adapter.acquire(`${payload.key}:warm:${process.pid}`));
    type Go = Extract<HotKeyWorkerMessage, { type: 'go' }>;
    // Listening before 'ready' (and before each 'done'): the next 'go' can never arrive unheard.
    let next = fromParent<Go>('go');
    await toParent({ type: 'ready' });
    const windows = payload.windows ?? 1;
    for (let window = 0; window < windows; window++) {
      const go = await next;
      if (window + 1 < windows) next = fromParent<Go>('go');
      await sleep(go.start - wallNow());
      const records = await contendAll(adapter, payload.key, payload.contenders, {
        until: go.until,
        remainingGrants: go.maxGrants,
        thinkMs: go.thinkMs,
        holdMs: go.holdMs,
      });
      await toParent({ type: 'done', records });
    }
  } finally {
    await adapter.close();
  }
});
