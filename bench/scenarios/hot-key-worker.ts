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
    await toParent({ type: 'ready' });
    const go = await fromParent<Extract<HotKeyWorkerMessage, { type: 'go' }>>('go');
    await sleep(go.start - wallNow());
    const records = await contendAll(adapter, payload.key, payload.contenders, {
      until: go.until,
      remainingGrants: go.maxGrants,
      thinkMs: go.thinkMs,
      holdMs: go.holdMs,
    });
    await toParent({ type: 'done', records });
  } finally {
    await adapter.close();
  }
});
