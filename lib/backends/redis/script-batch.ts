import { slotOfTag } from './cluster-slot';
import { EXTEND_MANY_CHUNK, EXTEND_MANY_SCRIPT, EXTEND_SCRIPT } from './extend.lua';
import { runCall, type ScriptCall } from './lock-calls';
import type { RedisPort, ShaCall } from './port/redis-port';
import { isNoScriptError, type RedisScript } from './redis-script';

export type BatchResult =
  { readonly ok: true; readonly reply: unknown } | { readonly ok: false; readonly error: unknown };

/**
 * Runs many script calls (renewals: each may safely run twice) in as few round trips as possible: one pipeline
 * on a single server; on a Cluster one pipeline per node (ioredis refuses a pipeline whose keys live on several
 * nodes), all nodes in parallel. Results are in input order, each the reply or that item's own error.
 *
 * On a single server a failed pipeline rejects as a whole (the connection is the problem); on a Cluster a
 * node group whose pipeline fails, or items of it that were redirected (the slot moved meanwhile), go again one
 * call per item, which the client redirects on its own.
 */
export async function runBatch(client: RedisPort, calls: readonly ScriptCall[]): Promise<BatchResult[]> {
  if (!client.evalshaMany) return Promise.all(calls.map((call) => settle(runCall(client, call))));
  if (!client.isCluster) return runCombined(client, calls);
  const results = new Array<BatchResult>(calls.length);
  const groups = new Map<string, number[]>();
  calls.forEach((call, index) => {
    const node = nodeOf(client, call);
    const group = groups.get(node);
    if (group) group.push(index);
    else groups.set(node, [index]);
  });
  await Promise.all(
    [...groups.values()].map(async (indexes) => {
      const group = indexes.map((index) => calls[index]);
      let answers: BatchResult[];
      try {
        answers = await runPipeline(client, group);
      } catch {
        // Extends are idempotent: items that already ran may run again.
        answers = await Promise.all(group.map((call) => settle(runCall(client, call))));
      }
      // Items whose slot moved (a failover, a resharding) come back MOVED or ASK one by one: ioredis redirects
      // a pipeline only when all its items name the same new node, and refreshes its slot map only then. One
      // call each is redirected, and teaches the client the new map for the next batch.
      await Promise.all(
        answers.map(async (answer, position) => {
          if (!answer.ok && isRedirection(answer.error))
            answers[position] = await settle(runCall(client, group[position]));
        }),
      );
      indexes.forEach((index, position) => (results[index] = answers[position]));
    }),
  );
  return results;
}

/**
 * On a single server: the exclusive-lock extends go as EXTEND_MANY_SCRIPT calls of up to EXTEND_MANY_CHUNK
 * locks each, everything else as it is, all in one pipeline. Each lock's result is taken from its chunk's reply.
 */
async function runCombined(client: RedisPort, calls: readonly ScriptCall[]): Promise<BatchResult[]> {
  const sent: ScriptCall[] = [];
  /** Per sent call: the index of the call it stands for, or the indexes of the extends it combines. */
  const sources: (number | number[])[] = [];
  let chunk: number[] = [];
  const flushChunk = () => {
    if (chunk.length === 1) {
      // A lone extend goes as it is.
      sent.push(calls[chunk[0]]);
      sources.push(chunk[0]);
    } else if (chunk.length > 1) {
      const keys = new Array<string>(chunk.length);
      const args = new Array<string | number>(chunk.length * 2);
      chunk.forEach((index, position) => {
        keys[position] = calls[index].keys[0];
        args[2 * position] = calls[index].args[0];
        args[2 * position + 1] = calls[index].args[1];
      });
      sent.push({ script: EXTEND_MANY_SCRIPT, keys, args, tag: '' });
      sources.push(chunk);
    }
    chunk = [];
  };
  for (let index = 0; index < calls.length; index++) {
    if (calls[index].script !== EXTEND_SCRIPT) {
      sent.push(calls[index]);
      sources.push(index);
      continue;
    }
    chunk.push(index);
    if (chunk.length === EXTEND_MANY_CHUNK) flushChunk();
  }
  flushChunk();

  const answers = await runPipeline(client, sent);
  const results = new Array<BatchResult>(calls.length);
  answers.forEach((answer, position) => {
    const source = sources[position];
    if (typeof source === 'number') {
      results[source] = answer;
    } else if (!answer.ok) {
      for (const index of source) results[index] = answer;
    } else {
      const replies = Array.isArray(answer.reply) ? (answer.reply as unknown[]) : [];
      source.forEach((index, offset) => {
        results[index] =
          offset < replies.length
            ? { ok: true, reply: replies[offset] }
            : { ok: false, error: new Error(`unexpected reply to extend-many: ${String(answer.reply)}`) };
      });
    }
  });
  return results;
}

/**
 * One pipeline (on a Cluster, of calls that one node serves) and a plain loop over the replies. Items answered
 * NOSCRIPT (a restarted server, or the first renewals of a process) are not sent again one EVAL each, which
 * would ship the script's source thousands of times to a server that just came back: one EVAL per script
 * loads it, and the rest go again as one more pipeline.
 */
async function runPipeline(client: RedisPort, calls: readonly ScriptCall[], retry = true): Promise<BatchResult[]> {
  const shaCalls = new Array<ShaCall>(calls.length);
  for (let index = 0; index < calls.length; index++) {
    const { script, keys, args } = calls[index];
    shaCalls[index] = { sha1: script.sha1, keys, args };
  }
  const replies = await client.evalshaMany!(shaCalls);
  const results = new Array<BatchResult>(calls.length);
  let unknownScript: number[] | undefined;
  for (let index = 0; index < replies.length; index++) {
    const [error, reply] = replies[index];
    if (!error) results[index] = { ok: true, reply };
    else if (retry && isNoScriptError(error)) (unknownScript ??= []).push(index);
    else results[index] = { ok: false, error };
  }
  if (unknownScript) await rerunUnknownScripts(client, calls, unknownScript, results);
  return results;
}

async function rerunUnknownScripts(
  client: RedisPort,
  calls: readonly ScriptCall[],
  indexes: number[],
  results: BatchResult[],
): Promise<void> {
  const loading = new Map<RedisScript, number>();
  const rest: number[] = [];
  for (const index of indexes) {
    if (loading.has(calls[index].script)) rest.push(index);
    else loading.set(calls[index].script, index);
  }
  // One EVAL per script: it runs that item and loads the script for the others.
  await Promise.all(
    [...loading].map(
      async ([script, index]) =>
        (results[index] = await settle(script.runSource(client, calls[index].keys, calls[index].args))),
    ),
  );
  if (rest.length === 0) return;
  // A second NOSCRIPT now (a flush in between) is that item's error; the next renewal tries again.
  const again = await runPipeline(
    client,
    rest.map((index) => calls[index]),
    false,
  );
  rest.forEach((index, position) => (results[index] = again[position]));
}

/** The master serving the call's slot, as far as the client knows; '' on a single server. */
function nodeOf(client: RedisPort, call: ScriptCall): string {
  if (!client.isCluster) return '';
  const slot = slotOfTag(call.tag);
  return client.nodeOfSlot(slot) ?? `slot ${slot}`;
}

/** A Cluster node's answer that the slot is served elsewhere now, or is moving: the call belongs there. */
function isRedirection(error: unknown): boolean {
  return error instanceof Error && /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) /.test(error.message);
}

function settle(work: Promise<unknown>): Promise<BatchResult> {
  return work.then(
    (reply) => ({ ok: true, reply }),
    (error: unknown) => ({ ok: false, error }),
  );
}
